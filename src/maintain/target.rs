//! The table a maintenance procedure works on, and everything it runs with: storage, where the
//! table lives, how its current metadata is found, the session settings, "now", and the
//! statement's progress reporting and cancellation.

use crate::error::Result;
use crate::iceberg::guard::{check_single_table_uuid, locate_newest};
use crate::iceberg::locate::{LocatedMetadata, MetadataSettings};
use crate::io::FileIO;
use crate::progress::Progress;
use crate::settings::Settings;

/// A table opened for maintenance.
#[derive(Debug, Clone)]
pub struct MaintenanceTarget {
    /// Storage serving the table's URIs.
    pub io: FileIO,
    /// The table location (root URI), as configured.
    pub location: String,
    /// How the current metadata file is found (table settings).
    pub metadata_settings: MetadataSettings,
    /// `db.table`, for messages.
    pub table_name: String,
    /// The session's settings (defaults, concurrency, gates).
    pub settings: Settings,
    /// "Now", in milliseconds since the epoch, fixed for the whole statement.
    pub now_ms: i64,
    /// Where the statement reports progress and learns it was cancelled (see [`crate::progress`]):
    /// the one way progress reaches maintenance; executors pass it on to what they call.
    pub progress: Progress,
}

impl MaintenanceTarget {
    /// Refuse when our own `metadata/` holds a second `table-uuid` and the table settings do not
    /// pick one (see [`check_single_table_uuid`]); `even_when_chosen` for procedures that delete
    /// by listing. `procedure` names the statement in the error.
    pub async fn check_single_table(&self, procedure: &str, even_when_chosen: bool) -> Result<()> {
        check_single_table_uuid(
            &self.io,
            &self.location,
            &self.metadata_settings,
            self.settings.metadata_read_concurrency(),
            (procedure, &self.table_name),
            even_when_chosen,
        )
        .await
    }

    /// The newest committed metadata ([`locate_newest`]): a pinned file that is not the newest
    /// refuses `procedure`.
    pub async fn locate_newest(&self, procedure: &str) -> Result<LocatedMetadata> {
        locate_newest(
            &self.io,
            &self.location,
            &self.metadata_settings,
            procedure,
            &self.table_name,
        )
        .await
    }
}
