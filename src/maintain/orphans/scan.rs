//! The listing step of `remove_orphan_files`: list the scan path recursively (first-level folders
//! concurrently), judge each file as it arrives, keep the orphans (and, for EXPLAIN, the kept
//! unreachable files). Symbolic links (local disk) are never followed below the table location
//! and never listed as files: they are collected for EXPLAIN and a warning, as are the entries
//! the listing could not vouch for (a name that is not UTF-8, an unreadable folder); neither is
//! ever deleted, and no metric counts them. Unfinished local uploads (`<name>#<digits>`, what
//! object_store's multipart upload writes until it completes; a killed writer leaves them) are
//! judged like any file: unreachable and older than `older_than`, they are orphans (reason
//! `unfinished_upload`); a young one, possibly still being written, is too young.

use futures::TryStreamExt;

use super::metrics::OrphanMetrics;
use crate::error::{Error, ErrorKind, Result};
use crate::io::{FileIO, FileInfo, Listed, SkipReason, path_key};
use crate::maintain::file_graph::reachable::{Lookup, ReachableFiles};
use crate::maintain::orphans::classify::{
    ListedFile, OrphanCategory, OrphanRules, OrphanVerdict, classify,
};
use crate::progress::{Phase, Progress};

/// What to scan and how to judge.
#[derive(Debug, Clone, Copy)]
pub struct ScanRequest<'a> {
    /// The table location (root URI).
    pub location: &'a str,
    /// The scan path below the root, normalised; `None` for the whole table.
    pub scan_rel: Option<&'a str>,
    pub older_than_ms: i64,
    /// Partition field names of every partition spec.
    pub partition_field_names: &'a [String],
    /// Keep a row per kept unreachable file (EXPLAIN).
    pub keep_kept_rows: bool,
    /// First-level folders listed at once.
    pub concurrency: usize,
}

/// A file to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub uri: String,
    pub category: OrphanCategory,
    pub size: u64,
    pub last_modified_ms: i64,
    pub reason: OrphanReason,
}

/// Why a file is an orphan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum OrphanReason {
    /// No metadata of the table reaches it.
    #[default]
    Unreachable,
    /// Unreachable, and an upload that never completed (`Listed::UnfinishedUpload`): a writer
    /// was killed while writing it (one still writing is kept by `older_than`).
    UnfinishedUpload,
}

impl OrphanReason {
    /// The EXPLAIN spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OrphanReason::Unreachable => "unreachable",
            OrphanReason::UnfinishedUpload => "unfinished_upload",
        }
    }
}

/// Why an unreachable file is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepReason {
    TooYoung,
    Hidden,
    NoLastModified,
    /// Another table's (see `other_tables`): would otherwise be an orphan.
    OtherTable,
}

impl KeepReason {
    /// The EXPLAIN spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeepReason::TooYoung => "too_young",
            KeepReason::Hidden => "hidden",
            KeepReason::NoLastModified => "no_last_modified",
            KeepReason::OtherTable => "other_table",
        }
    }
}

/// An unreachable file that stays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub uri: String,
    pub reason: KeepReason,
    pub size: u64,
    pub last_modified_ms: Option<i64>,
}

/// What the listing found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanOutcome {
    pub orphans: Vec<Orphan>,
    /// Kept unreachable files (only when asked for).
    pub kept: Vec<Kept>,
    pub listed: i64,
    pub reachable_listed: i64,
    pub too_young: i64,
    pub hidden: i64,
    pub skipped_missing_metadata: i64,
    /// Listed files that are another table's metadata (`other_tables::is_foreign_metadata`).
    pub foreign_metadata: Vec<String>,
    /// Symbolic links seen (URIs): not followed, not deleted.
    pub links: Vec<String>,
    /// Entries the listing could not vouch for: not listed, not deleted.
    pub skipped: Vec<(String, SkipReason)>,
}

/// Paths named in a warning.
const WARNING_EXAMPLES: usize = 10;

impl ScanOutcome {
    /// Warnings about the links and skipped entries (none when there were none).
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.links.is_empty() {
            let mut links: Vec<&str> = self.links.iter().map(String::as_str).collect();
            links.sort_unstable();
            let shown: Vec<String> = links
                .iter()
                .take(WARNING_EXAMPLES)
                .map(|l| format!("'{l}'"))
                .collect();
            warnings.push(format!(
                "remove_orphan_files: {} symbolic link(s) under the table location were not \
                 followed and are never deleted (nothing behind them was listed): {}",
                links.len(),
                shown.join(", ")
            ));
        }
        if !self.skipped.is_empty() {
            let mut skipped: Vec<&(String, SkipReason)> = self.skipped.iter().collect();
            skipped.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let shown: Vec<String> = skipped
                .iter()
                .take(WARNING_EXAMPLES)
                .map(|(uri, reason)| format!("'{uri}' ({reason})"))
                .collect();
            warnings.push(format!(
                "remove_orphan_files: {} entr(ies) under the table location could not be \
                 vouched for and were skipped (never deleted): {}",
                skipped.len(),
                shown.join(", ")
            ));
        }
        warnings
    }

    /// The nine metrics as a dry run reports them.
    pub fn dry_run_tally(&self) -> OrphanMetrics {
        let mut tally = OrphanMetrics::default();
        for orphan in &self.orphans {
            tally.count_deleted(orphan.category);
        }
        tally.skipped_missing_metadata_count = self.skipped_missing_metadata;
        tally
    }

    fn record(
        &mut self,
        listed: (&FileInfo, OrphanReason),
        verdict: OrphanVerdict,
        keep_rows: bool,
    ) {
        let (file, orphan_reason) = listed;
        let reason = match verdict {
            OrphanVerdict::Reachable => {
                self.reachable_listed += 1;
                return;
            }
            // Never deleted; cannot be listed under the root, but is never an orphan either.
            OrphanVerdict::OutsideTableRoot => return,
            OrphanVerdict::Orphan(category) => {
                if let Some(last_modified_ms) = file.last_modified_ms {
                    self.orphans.push(Orphan {
                        uri: file.uri.clone(),
                        category,
                        size: file.size,
                        last_modified_ms,
                        reason: orphan_reason,
                    });
                }
                return;
            }
            OrphanVerdict::Hidden => {
                self.hidden += 1;
                KeepReason::Hidden
            }
            OrphanVerdict::NoLastModified => {
                self.skipped_missing_metadata += 1;
                KeepReason::NoLastModified
            }
            OrphanVerdict::TooYoung => {
                self.too_young += 1;
                KeepReason::TooYoung
            }
        };
        if keep_rows {
            self.kept.push(Kept {
                uri: file.uri.clone(),
                reason,
                size: file.size,
                last_modified_ms: file.last_modified_ms,
            });
        }
    }
}

/// The URI listed: the root, or `<root>/<scan_rel>`.
pub fn scan_uri(location: &str, scan_rel: Option<&str>) -> String {
    let root = location.trim_end_matches('/');
    match scan_rel {
        Some(rel) => format!("{root}/{rel}"),
        None => root.to_string(),
    }
}

/// List and judge every file under the scan path.
pub async fn scan(
    io: &FileIO,
    request: &ScanRequest<'_>,
    reachable: &ReachableFiles,
    progress: &Progress,
) -> Result<ScanOutcome> {
    let scan_uri = scan_uri(request.location, request.scan_rel);
    let root_key = path_key(request.location);
    let rules = OrphanRules {
        table_root_key: &root_key,
        partition_field_names: request.partition_field_names,
        older_than_ms: request.older_than_ms,
    };
    let mut outcome = ScanOutcome::default();
    progress.phase(Phase::ListingFiles, None)?;
    let mut listing = io.list_entries(request.location, &scan_uri, request.concurrency);
    loop {
        let (file, orphan_reason) = match listing.try_next().await {
            Ok(Some(Listed::File(file))) => (file, OrphanReason::Unreachable),
            Ok(Some(Listed::UnfinishedUpload(file))) => (file, OrphanReason::UnfinishedUpload),
            Ok(Some(Listed::Link { uri })) => {
                outcome.links.push(uri);
                continue;
            }
            Ok(Some(Listed::Skipped { uri, reason })) => {
                outcome.skipped.push((uri, reason));
                continue;
            }
            Ok(None) => break,
            Err(e) if e.kind() == ErrorKind::FileDoesntExist && outcome.listed == 0 => break,
            Err(e) => return Err(e.context("remove_orphan_files: listing the table")),
        };
        outcome.listed += 1;
        progress.advance(1, file.size);
        if super::other_tables::is_foreign_metadata(request.location, &file.uri) {
            outcome.foreign_metadata.push(file.uri.clone());
        }
        let key = path_key(&file.uri);
        let reachable_now = match reachable.lookup(&key) {
            Lookup::Reachable => true,
            Lookup::Unreachable => false,
            Lookup::PrefixMismatch => return Err(prefix_mismatch(&file.uri, request.location)),
        };
        let listed = ListedFile {
            key: &key,
            size: Some(file.size),
            last_modified_ms: file.last_modified_ms,
        };
        let verdict = classify(&listed, &|_| reachable_now, &rules);
        outcome.record((&file, orphan_reason), verdict, request.keep_kept_rows);
    }
    let seen = outcome.listed > 0 || !outcome.links.is_empty() || !outcome.skipped.is_empty();
    if request.scan_rel.is_some() && !seen {
        // ClickHouse's text: the scan path ends with a slash (`'<table>/nope/'`).
        return Err(Error::bad_arguments(format!(
            "Scan path '{scan_uri}/' does not exist"
        )));
    }
    Ok(outcome)
}

fn prefix_mismatch(uri: &str, location: &str) -> Error {
    Error::incorrect_data(format!(
        "Cannot tell whether '{uri}' is an orphan: the table metadata references a file with the \
         same path under '{location}' but a different scheme or authority; nothing was deleted"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    const DAY: i64 = 86_400_000;

    async fn put(io: &FileIO, uri: &str) {
        io.overwrite(uri, Bytes::from_static(b"x")).await.unwrap();
    }

    fn request<'a>(scan_rel: Option<&'a str>, names: &'a [String], older: i64) -> ScanRequest<'a> {
        ScanRequest {
            location: "memory:///t",
            scan_rel,
            older_than_ms: older,
            partition_field_names: names,
            keep_kept_rows: true,
            concurrency: 4,
        }
    }

    #[tokio::test]
    async fn judges_every_listed_file() {
        let io = FileIO::memory();
        for rel in [
            "data/live.parquet",
            "data/stray.parquet",
            "data/_c=1/stray.parquet",
            "data/_tmp/x.parquet",
            ".hidden/y.parquet",
            "metadata/snap-1-x.avro",
        ] {
            put(&io, &format!("memory:///t/{rel}")).await;
        }
        let mut reachable = ReachableFiles::new("memory:///t");
        reachable.insert("memory:///t/data/live.parquet");
        let names = vec!["_c".to_string()];
        let now = chrono::Utc::now().timestamp_millis();
        let out = scan(
            &io,
            &request(None, &names, now + DAY),
            &reachable,
            &Progress::default(),
        )
        .await
        .unwrap();
        assert_eq!((out.listed, out.reachable_listed, out.hidden), (6, 1, 2));
        let mut orphans: Vec<(&str, OrphanCategory)> = out
            .orphans
            .iter()
            .map(|o| (o.uri.as_str(), o.category))
            .collect();
        orphans.sort();
        assert_eq!(
            orphans,
            [
                ("memory:///t/data/_c=1/stray.parquet", OrphanCategory::Data),
                ("memory:///t/data/stray.parquet", OrphanCategory::Data),
                (
                    "memory:///t/metadata/snap-1-x.avro",
                    OrphanCategory::ManifestList
                ),
            ]
        );
        assert_eq!(out.kept.len(), 2);
        let young = scan(
            &io,
            &request(None, &names, now - DAY),
            &reachable,
            &Progress::default(),
        )
        .await
        .unwrap();
        assert!(young.orphans.is_empty());
        assert_eq!(young.too_young, 3);
    }

    /// A killed writer's unfinished local upload (`<name>#<digits>`) is judged like any file:
    /// old and unreachable, an orphan that says what it is; young, too young; hidden, hidden.
    #[tokio::test]
    async fn unfinished_uploads_are_judged_like_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        let now = chrono::Utc::now().timestamp_millis();
        let write = |rel: &str, mtime_ms: i64| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"part of a file").unwrap();
            let at = std::time::UNIX_EPOCH
                + std::time::Duration::from_millis(u64::try_from(mtime_ms).unwrap());
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(at).unwrap();
        };
        write("data/live.parquet", now - 10 * DAY);
        write("data/live.parquet#1", now - 10 * DAY);
        write("data/00000-0-compacted-00002.parquet#1", now);
        write(
            "data/_tmp/00000-0-compacted-00003.parquet#1",
            now - 10 * DAY,
        );
        write("data/odd.parquet#ab", now - 10 * DAY);
        let location = root.to_str().unwrap();
        let mut reachable = ReachableFiles::new(location);
        reachable.insert(&format!("{location}/data/live.parquet"));
        let names: Vec<String> = Vec::new();
        let request = ScanRequest {
            location,
            ..request(None, &names, now - DAY)
        };
        let io = FileIO::local();
        let out = scan(&io, &request, &reachable, &Progress::default())
            .await
            .unwrap();
        let mut orphans: Vec<(String, OrphanReason)> = out
            .orphans
            .iter()
            .map(|o| (o.uri.clone(), o.reason))
            .collect();
        orphans.sort();
        assert_eq!(
            orphans,
            [
                (
                    format!("{location}/data/live.parquet#1"),
                    OrphanReason::UnfinishedUpload
                ),
                (
                    format!("{location}/data/odd.parquet#ab"),
                    OrphanReason::Unreachable
                ),
            ]
        );
        assert_eq!(out.orphans[0].category, OrphanCategory::Data);
        assert_eq!((out.listed, out.reachable_listed), (5, 1));
        assert_eq!((out.too_young, out.hidden), (1, 1));
    }

    #[tokio::test]
    async fn missing_scan_path_is_an_error_but_an_empty_root_is_not() {
        let io = FileIO::memory();
        let reachable = ReachableFiles::new("memory:///t");
        let names: Vec<String> = Vec::new();
        let e = scan(
            &io,
            &request(Some("nope"), &names, 0),
            &reachable,
            &Progress::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments);
        assert_eq!(e.message(), "Scan path 'memory:///t/nope/' does not exist");
        let out = scan(
            &io,
            &request(None, &names, 0),
            &reachable,
            &Progress::default(),
        )
        .await
        .unwrap();
        assert_eq!(out.listed, 0);
    }

    #[test]
    fn links_and_skipped_entries_are_warned_about() {
        assert!(ScanOutcome::default().warnings().is_empty());
        let outcome = ScanOutcome {
            links: (0..12).map(|i| format!("/t/data/l{i:02}")).collect(),
            skipped: vec![(
                "/t/data/\\xff".into(),
                SkipReason::Unreadable("Permission denied".into()),
            )],
            ..Default::default()
        };
        let w = outcome.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("12 symbolic link(s)") && w[0].contains("'/t/data/l09'"),
            "{w:?}"
        );
        assert!(!w[0].contains("l10"), "ten named: {w:?}");
        assert!(
            w[1].contains("'/t/data/\\xff' (cannot be read: Permission denied)"),
            "{w:?}"
        );
    }

    #[test]
    fn scan_uris() {
        assert_eq!(scan_uri("s3://b/t/", Some("data")), "s3://b/t/data");
        assert_eq!(scan_uri("/w/t", None), "/w/t");
    }
}
