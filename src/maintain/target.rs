//! The table a maintenance procedure works on, and everything it runs with: storage, where the
//! table lives, how its current metadata is found, the session settings, "now", and the
//! statement's progress reporting and cancellation.

use crate::engine::progress::Progress;
use crate::iceberg::locate::MetadataSettings;
use crate::io::FileIO;
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
    /// Where the statement reports progress and learns it was cancelled (see
    /// [`crate::engine::progress`]); executors without the target use [`Progress::current`].
    pub progress: Progress,
}
