//! `SELECT` (and `WITH … SELECT`) statements. icetrim's front end only finds where the query ends
//! and takes off a trailing `FORMAT <name>`; the text is parsed and planned by the query engine
//! (ClickHouse dialect), which reads the `system.iceberg_*` metadata tables.

use std::fmt;

/// A query over the metadata tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    /// The query as written, without `FORMAT` and the trailing `;`.
    pub text: String,
    pub format: Option<String>,
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        super::ast::write_format(f, &self.format)
    }
}
