//! `remove_orphan_files`: list the table, delete what nothing reaches.
//!
//! Steps, in order; every check that needs no I/O runs before any I/O:
//! 1. **Arguments** (no I/O): `older_than` defaults to `now - iceberg_orphan_files_older_than_seconds`;
//!    a value after the statement's "now" is refused with ClickHouse's message (the binder checks
//!    too, but the executor's clock may differ); `location` is re-normalised (leading `./`, empty
//!    and `.` components dropped; `..` or a leading `/` refused).
//! 2. **Newest metadata** ([`locate`](crate::iceberg::locate); a stale version hint is never followed). When the table
//!    setting `iceberg_metadata_file_path` pins a file, it must be the newest committed one
//!    (else `BAD_ARGUMENTS`): scanning against an older file would delete newer commits' files.
//!    Unless `gc.enabled` is absent or `true`, the statement is refused (`BAD_ARGUMENTS`; Java's
//!    `DeleteOrphanFiles` refuses likewise, and so does our `expire_snapshots`).
//! 3. **Reachable set** ([`collect_reachable`](crate::maintain::file_graph::reachable::collect_reachable)); a reference outside the table location is
//!    refused (`NOT_IMPLEMENTED`, naming up to 10).
//! 4. **Listing** ([`scan`]): recursive and streaming under `<root>` or `<root>/<location>`, each
//!    file judged by [`classify::classify`] as it arrives; first-level folders
//!    are listed concurrently (up to `iceberg_metadata_read_concurrency`; a local table is walked
//!    directly, folders shared by up to one worker per core, no symbolic link below the table
//!    location followed, see `FileIO::list_entries`). A `location` under which nothing is listed
//!    (no file, link or skipped entry) is `BAD_ARGUMENTS` "Scan path '<path>' does not exist". A listed
//!    file whose path matches a reachable one except for scheme or authority fails the statement
//!    (`INCORRECT_DATA`; Java's `PrefixMismatchMode.ERROR`) before anything is deleted.
//!    **Unfinished uploads**: on local disk, object_store's multipart upload writes `<name>` as
//!    `<name>#<digits>` until it completes, and a writer killed meanwhile (`kill -9` during a
//!    compaction) leaves that file. The walk lists it ([`crate::io::Listed::UnfinishedUpload`])
//!    and it is judged like any file: unreachable and older than `older_than`, it is an orphan
//!    (EXPLAIN reason `unfinished_upload`, counted in its category by name); a young one may
//!    still be written and is too young. No other procedure deletes them (the next compaction
//!    must not: another may be writing). Object stores keep an unfinished multipart upload's
//!    parts out of every listing: a bucket lifecycle rule removes them (see the README).
//!    **Other tables** ([`other_tables`], [`protect`]): files that metadata resolution takes for table
//!    metadata (every `*.metadata.json` spelling, `version-hint.text`) outside our own
//!    `metadata/` folder belong to other tables. A whole-table scan finds them in its own listing;
//!    a narrowed one (`location = ...`) lists the whole location first. Found ones refuse the
//!    statement (`BAD_ARGUMENTS`, naming them; dry runs too; EXPLAIN lists them) unless
//!    `protect_other_tables = 1`: then every metadata file found for them is read, and an orphan
//!    that any of them reaches, or that lies under their location, is kept (`other_table`).
//!    A found table that cannot be read refuses the statement.
//!    The metadata files the listing calls orphans then pass the metadata-file rule
//!    ([`newer_metadata`]): one at least as new as the planned file (version or
//!    `last-updated-ms`) is never deleted, and one of a version at least the planned one refuses
//!    the statement.
//! 5. **Delete** (unless dry run or EXPLAIN): re-locate the newest metadata; if it is no longer the
//!    file scanned against, nothing is deleted and the statement fails with `QUERY_WAS_CANCELLED`
//!    "Current metadata file changed during orphan scan (was '<a>', now '<b>'); nothing was
//!    deleted" (a concurrent commit may reference files the scan judged orphaned; re-run the
//!    statement). Then bulk deletes ([`delete`]), each path re-checked with [`is_under`](crate::io::is_under) right
//!    before (on local disk also: no link on its path, a regular file; `FileIO::delete_below`);
//!    no metadata is written.
//!
//! Deliberate differences from ClickHouse 26.9: files under a `_`/`.` folder (other than a
//! `<partition field>=<value>` folder) and dotfiles are kept (ClickHouse deletes them as data
//! files); `gc.enabled=false`, references outside the location, a pinned older metadata file,
//! other tables' metadata under the location (unless `protect_other_tables = 1`; ClickHouse and
//! Java delete their files, apache/iceberg #17213) and a concurrent commit refuse the statement;
//! v1 tables are scanned (ClickHouse refuses them).
//!
//! **Result**: ClickHouse's nine rows ([`metrics`]). A dry run counts every orphan as deleted; a
//! real run counts the deletes that succeeded (a file already gone counts as deleted) and the
//! failures in `failed_deletions_count` (also a warning naming the first paths).
//!
//! **EXPLAIN** returns one row per orphan, per kept unreachable file, per symbolic link and per
//! skipped entry, then totals; columns:
//!
//! | column          | type   | orphan row            | kept row                                  | link row        | skipped row      | total row               |
//! |-----------------|--------|-----------------------|-------------------------------------------|-----------------|------------------|-------------------------|
//! | `item`          | String | `orphan`              | `kept`                                    | `link`          | `skipped`        | `total`                 |
//! | `path`          | String | the file's URI        | the file's URI                            | the link's URI  | the entry's URI (bytes that are not UTF-8 or control characters escaped, `\xff`) | metric name (see below) |
//! | `category`      | String | by name: `data`, `position_delete`, `equality_delete`, `manifest`, `manifest_list`, `metadata`, `statistics` | `''` | `''` | `''` | `''` |
//! | `reason`        | String | `unreachable`, `unfinished_upload` | `too_young`, `hidden`, `no_last_modified`, `other_table` | `symlink`       | `not_utf8_name`, `control_character_name`, `unreadable`, `folder_loop` | `''` |
//! | `files`         | Int64  | 1                     | 1                                         | 0               | 0                | how many files          |
//! | `size_bytes`    | Int64  | the file's size       | the file's size                           | 0               | 0                | their total size        |
//! | `last_modified` | String | `YYYY-MM-DD hh:mm:ss` in the session time zone | same, `''` when the store gave none | `''`            | `''`             | `''`                    |
//!
//! **Symbolic links** (local disk; object stores have none) below the table location are never
//! followed and never deleted, file and folder links alike (a link can lead outside the table
//! location): files behind a link are not
//! listed, so they are neither orphans nor kept. The table location itself is opened as the path
//! it is (a location that is a link is the user's choice; `location = '<link>'` lists nothing).
//! Links and skipped entries (a name that is not UTF-8 or holds a control character, a folder
//! that cannot be read, a bind-mount loop) get an EXPLAIN row and a warning on a run or dry run;
//! they are counted by no metric row and by no total row. See `FileIO::list_entries` and
//! `FileIO::delete_below` (the delete re-checks: nothing is unlinked through a link).
//!
//! Total rows: the nine metrics (as a dry run reports them; `failed_deletions_count` is 0), then
//! `kept_too_young_count`, `kept_hidden_count`, `reachable_listed_count` (listed files that are
//! reachable; they get no row of their own) and `reachable_files_count` (the size of the
//! reachable set, `size_bytes` 0).
//!
//! When other tables are found, EXPLAIN does not refuse: the plan is the one
//! `protect_other_tables = 1` would carry out, and it starts with one row per other table (reason
//! `protected`, or `refused` when the statement itself, without `protect_other_tables = 1`, would
//! refuse) and one per metadata file found for it, and ends with one more total:
//!
//! | column     | `other_table` row                      | `other_table_metadata` row                          |
//! |------------|----------------------------------------|-----------------------------------------------------|
//! | `item`     | `other_table`                          | `other_table_metadata`                              |
//! | `path`     | its location (derived, see [`other_tables`]) | the metadata file (or version hint) found     |
//! | `category` | `''`                                   | `metadata` or `version_hint`                        |
//! | `reason`   | `protected` or `refused`               | the file's `location` field (`''` for a hint)       |
//! | `files`    | metadata files found for it            | 1                                                   |
//! | `size_bytes`, `last_modified` | 0, `''`             | 0, `''`                                             |
//!
//! and the total `kept_other_table_count`: files that would otherwise be orphans, kept because
//! they are another table's (`size_bytes` their size). Without other tables the plan is unchanged.
//!
//! Memory: the reachable set, one listing page per first-level folder in flight, and the orphans
//! found (held until the pointer re-check; EXPLAIN also holds the kept rows).

//!
//! Files: decisions (pure, no I/O): [`classify`] (the verdict on a listed file), [`other_tables`]
//! (which files are other tables' metadata, their derived locations and grouping, what protection
//! keeps), [`metrics`], [`explain`] (the EXPLAIN rows). Execution: [`execute`] (the steps above),
//! [`scan`] (lists and judges), [`protect`] (searches for, reads and refuses other tables),
//! [`newer_metadata`] (reads metadata heads, then applies the rule of
//! [`classify::metadata_file_at_least_as_new`]), [`delete`].

pub mod classify;
mod delete;
pub mod execute;
pub mod explain;
pub mod metrics;
mod newer_metadata;
mod other_tables;
mod protect;
mod scan;

pub use crate::io::SkipReason;
pub use execute::OrphanOutcome;
pub use explain::OrphanExplainRow;
pub use metrics::OrphanMetrics;
pub use scan::KeepReason;

/// Whether `uri` may be deleted: strictly inside the table location.
pub(crate) fn deletable(location: &str, uri: &str) -> bool {
    crate::io::is_under(location, uri)
}
