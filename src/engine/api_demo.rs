//! The demo table, as a public call: what the README's first command maintains and what the
//! examples and documentation run on, written by icetrim's own table generator.

use super::api::Table;
use crate::clock::{Clock, SystemClock};
use crate::error::Result;
use crate::generate::demo_table;
use crate::io::FileIO;

/// What [`Table::write_demo`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DemoTable {
    /// The table's location (the folder given).
    pub location: String,
    /// The orphan files written beside the table (dated before its history), full paths.
    pub orphans: Vec<String>,
    /// The branch (with its own retention) and the tag the table has.
    pub branch: String,
    pub tag: String,
}

impl Table {
    /// Writes icetrim's demo table in the local folder `location` (absolute): about 20 snapshots
    /// over the ten days before now (appends, deletes, an overwrite, a compaction, a merge),
    /// a branch with its own retention, a tag, a staged snapshot, a statistics file, real Parquet
    /// rows, and four orphan files. pyiceberg and ClickHouse read it.
    ///
    /// ```
    /// use icetrim::{StorageOptions, Table};
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let dir = tempfile::tempdir()?;
    /// let location = dir.path().join("t").to_string_lossy().into_owned();
    /// let demo = Table::write_demo(&location).await?;
    /// assert_eq!(demo.orphans.len(), 4);
    /// let table = Table::open(&location, StorageOptions::default())?;
    /// # let _ = table;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub async fn write_demo(location: &str) -> Result<DemoTable> {
        let facts = demo_table(&FileIO::local(), location, SystemClock.now_ms()).await?;
        Ok(DemoTable {
            location: facts.location,
            orphans: facts.orphans,
            branch: facts.branch,
            tag: facts.tag,
        })
    }
}
