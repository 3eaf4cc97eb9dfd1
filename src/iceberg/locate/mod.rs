//! Finding a table's current metadata file, following ClickHouse's resolver
//! (`getLatestOrExplicitMetadataFileAndVersion`) with one safety change.
//!
//! In order:
//! 1. `iceberg_metadata_file_path`: that file, relative to the table location (`..` refused) or a
//!    full path under it.
//! 2. Otherwise list `<location>/metadata/` (direct children only). Candidates are
//!    `v<N>.metadata.json`, `v<N>-<uuid>.metadata.json` and `<N>-<uuid>.metadata.json`, each
//!    optionally gzip-marked (`.gz.metadata.json`, `.gzip.metadata.json`, `.metadata.json.gz`).
//!    Temporary commit files (`<uuid>.metadata.json`) and other names are ignored.
//!    - `iceberg_metadata_table_uuid`: only files whose `table-uuid` matches (compared on
//!      alphanumerics, case-insensitively, as ClickHouse does); a candidate without `table-uuid` is
//!      an error.
//!    - `iceberg_recent_metadata_file_by_last_updated_ms_field`: the largest `last-updated-ms`
//!      (ties: the higher version); otherwise the highest version.
//! 3. `metadata/version-hint.text` (holding `N`, a file name, or a name without `.metadata.json`) is
//!    consulted only when `iceberg_use_version_hint` is set, as in ClickHouse. Unlike ClickHouse,
//!    a hint never pins an older file: it is followed only when it names a listed file of the
//!    highest version; a stale or dangling hint is ignored (maintenance always works on the newest
//!    committed file). A followed hint settles which file is current when names are ambiguous.
//!
//!    Whenever `version-hint.text` exists, [`LocatedMetadata::warnings`] says so when the hint is
//!    garbage, points outside our own `metadata/`, or names a missing or older file (readers
//!    that trust hints would see another version); such a hint is never followed, and commits
//!    never build on it (see [`crate::iceberg::commit`]).
//!
//! For maintenance, [`crate::iceberg::guard::locate_newest`] refuses a pinned file that is not
//! the newest, and [`crate::iceberg::guard::check_single_table_uuid`] refuses a `metadata/` holding a second `table-uuid` unless
//! `iceberg_metadata_table_uuid` picks one (only the first bytes of each file are read).
//!
//! Ambiguity: when the candidates mix `v…` and `NNNNN-…` names, or several files carry the chosen
//! version, reads take the chosen file but [`LocatedMetadata::check_writable`] refuses commits
//! (ClickHouse likewise refuses to write such tables), unless an explicit path or a followed hint
//! names the file.

use futures::{StreamExt, TryStreamExt};

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::metadata::{MetadataCompression, TableMetadata};
use crate::io::FileIO;

mod mistakes;
mod version_hint;

pub use mistakes::copied_or_moved_hint;
use mistakes::{no_metadata, tables_below, warehouse_hint};
use version_hint::{follow_hint, read_hint};
pub use version_hint::{hint_warning, hinted_file_name};

/// Table settings that steer the choice of the metadata file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataSettings {
    /// `iceberg_metadata_file_path`.
    pub metadata_file_path: Option<String>,
    /// `iceberg_metadata_table_uuid`.
    pub table_uuid: Option<String>,
    /// `iceberg_recent_metadata_file_by_last_updated_ms_field`.
    pub by_last_updated_ms: bool,
    /// `iceberg_use_version_hint`.
    pub use_version_hint: bool,
}

/// How metadata files of a table are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NamingScheme {
    /// `v<N>.metadata.json` (ClickHouse, Java Hadoop tables).
    Versioned,
    /// `v<N>-<uuid>.metadata.json`.
    VersionedUuid,
    /// `<N>-<uuid>.metadata.json` with `N` zero-padded to `width` digits (pyiceberg, Java catalogs).
    Sequenced { width: usize },
    /// A name that carries no version (only through `iceberg_metadata_file_path`).
    Unversioned,
}

impl NamingScheme {
    fn family(self) -> u8 {
        match self {
            NamingScheme::Versioned | NamingScheme::VersionedUuid => 0,
            NamingScheme::Sequenced { .. } => 1,
            NamingScheme::Unversioned => 2,
        }
    }
}

/// What a metadata file's name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataFileName {
    pub version: Option<u64>,
    pub naming: NamingScheme,
    pub compression: MetadataCompression,
}

/// Read a metadata file name (the last path segment of `name`). `None` for names that are not
/// versioned metadata files, temporary `<uuid>.metadata.json` files included.
pub fn parse_file_name(name: &str) -> Option<MetadataFileName> {
    let name = file_name(name);
    let compression = MetadataCompression::from_file_name(name)?;
    let stem = MetadataCompression::strip_suffix(name)?;
    let (naming, digits) = if let Some(rest) = stem.strip_prefix('v') {
        match rest.split_once('-') {
            Some((digits, uuid)) if is_uuid(uuid) => (NamingScheme::VersionedUuid, digits),
            Some(_) => return None,
            None => (NamingScheme::Versioned, rest),
        }
    } else {
        let (digits, uuid) = stem.split_once('-')?;
        if !is_uuid(uuid) {
            return None;
        }
        let width = digits.len();
        (NamingScheme::Sequenced { width }, digits)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let version = digits.parse::<u64>().ok()?;
    Some(MetadataFileName {
        version: Some(version),
        naming,
        compression,
    })
}

fn is_uuid(text: &str) -> bool {
    uuid::Uuid::try_parse(text).is_ok()
}

/// The last `/`-separated segment.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The current metadata file of a table, parsed.
#[derive(Debug, Clone)]
pub struct LocatedMetadata {
    /// The table location as given, without a trailing slash.
    pub location: String,
    /// Full path of the metadata file, in the location's form.
    pub path: String,
    pub version: Option<u64>,
    pub naming: NamingScheme,
    pub compression: MetadataCompression,
    pub metadata: TableMetadata,
    /// Both naming schemes, or several files of this version, and nothing says which is current.
    pub ambiguous_naming: bool,
    /// Path of `metadata/version-hint.text` when it exists.
    pub version_hint: Option<String>,
    /// The table asks for a version hint (`iceberg_use_version_hint`).
    pub use_version_hint: bool,
    /// The file was named by `iceberg_metadata_file_path` (it may not be the newest).
    pub pinned: bool,
    /// What the caller should pass on to the user (a version hint that is garbage, points
    /// outside the table, or names a missing or older file).
    pub warnings: Vec<String>,
    /// A catalog named this file as the table's current metadata ([`Self::from_catalog`]): the
    /// catalog, not `metadata/`, decides which file is current, so commits need no version.
    pub from_catalog: bool,
    /// A fork found in `metadata/` ([`find_fork`]): refused by [`Self::check_writable`].
    pub fork: Option<Fork>,
}

/// Two metadata files of one version, one in the current file's history and one not: two
/// writers each committed that version on the same base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    pub version: u64,
    /// The file of that version the current metadata descends from.
    pub ours: String,
    /// The other writer's file of that version.
    pub theirs: String,
}

impl LocatedMetadata {
    /// The metadata a catalog names as current: `path` (its `metadata-location`) parsed as
    /// `metadata`; the table location is the metadata's own `location`.
    pub fn from_catalog(path: &str, metadata: TableMetadata) -> Self {
        let name = parse_file_name(path);
        LocatedMetadata {
            location: metadata.location().trim_end_matches('/').to_string(),
            path: path.to_string(),
            version: name.and_then(|n| n.version),
            naming: name.map_or(NamingScheme::Unversioned, |n| n.naming),
            compression: name.map_or_else(
                || MetadataCompression::from_file_name(path).unwrap_or(MetadataCompression::None),
                |n| n.compression,
            ),
            metadata,
            ambiguous_naming: false,
            version_hint: None,
            use_version_hint: false,
            pinned: false,
            warnings: Vec::new(),
            from_catalog: true,
            fork: None,
        }
    }

    /// `<location>/metadata/`.
    pub fn metadata_dir(&self) -> String {
        metadata_dir(&self.location)
    }

    /// Refuse commits when the current file cannot be told for sure or has no version.
    pub fn check_writable(&self) -> Result<()> {
        if self.from_catalog {
            return Ok(());
        }
        if let Some(fork) = &self.fork {
            return Err(self.forked(fork));
        }
        if self.ambiguous_naming {
            return Err(Error::not_implemented(format!(
                "Cannot write to Iceberg table at '{}': its metadata folder mixes vN.metadata.json and \
                 NNNNN-<uuid>.metadata.json names (or holds several files of version {}), so the \
                 current metadata file is ambiguous; name it with the table setting \
                 iceberg_metadata_file_path or with metadata/version-hint.text and \
                 iceberg_use_version_hint = 1",
                self.location,
                self.version.unwrap_or(0)
            )));
        }
        if self.version.is_none() {
            return Err(Error::not_implemented(format!(
                "Cannot write to Iceberg table at '{}': metadata file '{}' has no version in its name",
                self.location, self.path
            )));
        }
        Ok(())
    }
}

impl LocatedMetadata {
    /// Refuses a forked table ([`Fork`]): for procedures that delete without committing
    /// (`remove_orphan_files`), to which the other branch's files look unreferenced.
    pub fn check_not_forked(&self) -> Result<()> {
        match &self.fork {
            Some(fork) => Err(self.forked(fork)),
            None => Ok(()),
        }
    }

    /// The refusal for a fork ([`Fork`]): typically a commit by path behind a catalog, then a
    /// commit through the catalog. Neither branch is safe to build on: each lacks the other's
    /// changes, and a file only the other references looks unreferenced from here.
    fn forked(&self, fork: &Fork) -> Error {
        let mut files = [fork.ours.as_str(), fork.theirs.as_str()];
        files.sort_unstable();
        Error::not_implemented(format!(
            "Cannot maintain Iceberg table at '{}': it forked at version {}. Its metadata folder \
             holds two metadata files of version {}, '{}' and '{}', and neither descends from \
             the other: two writers each committed version {} on the same base, typically a \
             commit by path (icetrim, ClickHouse) to a table a catalog owns, then a commit \
             through the catalog, which knew nothing of the first. Each file lacks the other's \
             changes. Maintain the table through the catalog that owns it (DataLakeCatalog), or \
             name the file to build on with the table setting iceberg_metadata_file_path",
            self.location, fork.version, fork.version, files[0], files[1], fork.version,
        ))
    }
}

/// A fork among `versions` (every versioned metadata file: version and path): another file of
/// the current file's version, which the current file does not descend from. Two writers each
/// committed that version on the same base (a commit by path to a table a catalog owns, then the
/// catalog's). An older version with a second file is not judged: a writer that lost a commit
/// race leaves exactly that behind (an orphan, as `remove_orphan_files` treats it).
pub fn find_fork(
    versions: &[(u64, String)],
    current: &str,
    metadata: &TableMetadata,
) -> Option<Fork> {
    let version = parse_file_name(current)?.version?;
    let history: std::collections::HashSet<String> = metadata
        .metadata_log()
        .iter()
        .map(|e| crate::io::path_key(&e.metadata_file))
        .chain(std::iter::once(crate::io::path_key(current)))
        .collect();
    let (_, theirs) = versions
        .iter()
        .find(|(v, p)| *v == version && !history.contains(&crate::io::path_key(p)))?;
    Some(Fork {
        version,
        ours: current.to_string(),
        theirs: theirs.clone(),
    })
}

/// `<location>/metadata/`.
pub fn metadata_dir(location: &str) -> String {
    format!("{}/metadata/", location.trim_end_matches('/'))
}

/// `<location>/metadata/version-hint.text`.
pub fn version_hint_path(location: &str) -> String {
    format!("{}version-hint.text", metadata_dir(location))
}

/// A listed candidate.
#[derive(Debug, Clone)]
struct Candidate {
    path: String,
    name: MetadataFileName,
    version: u64,
}

/// Find and read the current metadata file of the table at `location`.
pub async fn locate(
    io: &FileIO,
    location: &str,
    settings: &MetadataSettings,
) -> Result<LocatedMetadata> {
    let location = location.trim_end_matches('/').to_string();
    let mut listing = list_metadata_dir(io, &location).await?;
    let folder_empty = listing.is_empty();
    // Only metadata files and the hint matter below. A long-lived table's folder also holds every
    // manifest list and manifest (100,000 snapshots: 18 MB of names), which are not kept while
    // its metadata is read.
    listing.retain(|n| n == "version-hint.text" || parse_file_name(n).is_some());
    listing.shrink_to_fit();
    let version_hint = listing
        .iter()
        .any(|n| n == "version-hint.text")
        .then(|| version_hint_path(&location));
    if let Some(explicit) = &settings.metadata_file_path {
        let path = resolve_explicit(&location, explicit)?;
        let name = parse_file_name(&path).unwrap_or(MetadataFileName {
            version: None,
            naming: NamingScheme::Unversioned,
            compression: MetadataCompression::from_file_name(&path)
                .unwrap_or(MetadataCompression::None),
        });
        let metadata = read_metadata(io, &path).await?;
        return Ok(LocatedMetadata {
            location,
            path,
            version: name.version,
            naming: name.naming,
            compression: name.compression,
            metadata,
            ambiguous_naming: false,
            version_hint,
            use_version_hint: settings.use_version_hint,
            pinned: true,
            warnings: Vec::new(),
            from_catalog: false,
            fork: None,
        });
    }
    let dir = metadata_dir(&location);
    let candidates: Vec<Candidate> = listing
        .iter()
        .filter_map(|n| {
            let name = parse_file_name(n)?;
            Some(Candidate {
                path: format!("{dir}{n}"),
                version: name.version?,
                name,
            })
        })
        .collect();
    if candidates.is_empty() {
        let mut error = no_metadata(&location, None);
        if folder_empty {
            let below = tables_below(io, &location).await;
            error = error.append(&warehouse_hint(&location, &below));
        }
        return Err(error);
    }
    let versions: Vec<(u64, String)> = candidates
        .iter()
        .map(|c| (c.version, c.path.clone()))
        .collect();
    let mut chosen = choose(io, &location, candidates, settings).await?;
    let mut hinted = false;
    let mut warnings = Vec::new();
    if version_hint.is_some()
        && let Some(text) = read_hint(io, &location).await?
    {
        if settings.use_version_hint {
            hinted = follow_hint(&text, &location, &mut chosen);
        }
        warnings.extend(hint_warning(
            &text,
            &location,
            &chosen.candidate.path,
            chosen.candidate.version,
            &listing,
        ));
    }
    let Chosen {
        candidate,
        metadata,
        ambiguous,
        ..
    } = chosen;
    let metadata = match metadata {
        Some(m) => m,
        None => read_metadata(io, &candidate.path).await?,
    };
    // A version hint the table asks for settles which file is current.
    let fork = (!hinted)
        .then(|| find_fork(&versions, &candidate.path, &metadata))
        .flatten();
    let located = LocatedMetadata {
        location,
        path: candidate.path,
        version: Some(candidate.version),
        naming: candidate.name.naming,
        compression: candidate.name.compression,
        metadata,
        ambiguous_naming: ambiguous && !hinted,
        version_hint,
        use_version_hint: settings.use_version_hint,
        pinned: false,
        warnings,
        from_catalog: false,
        fork,
    };
    Ok(located)
}

/// The versioned metadata files directly under `<location>/metadata/`: `(version, name)`.
pub async fn metadata_versions(io: &FileIO, location: &str) -> Result<Vec<(u64, String)>> {
    Ok(list_metadata_dir(io, location)
        .await?
        .into_iter()
        .filter_map(|n| Some((parse_file_name(&n)?.version?, n)))
        .collect())
}

/// The choice among candidates, with the metadata when it was read on the way.
struct Chosen {
    candidate: Candidate,
    metadata: Option<TableMetadata>,
    ambiguous: bool,
    /// The other candidates of the chosen version, which a version hint may prefer.
    rivals: Vec<Candidate>,
}

async fn choose(
    io: &FileIO,
    location: &str,
    candidates: Vec<Candidate>,
    settings: &MetadataSettings,
) -> Result<Chosen> {
    let needs_reading = settings.table_uuid.is_some() || settings.by_last_updated_ms;
    let mut read: Vec<(Candidate, Option<TableMetadata>)> = if needs_reading {
        read_all(io, candidates).await?
    } else {
        candidates.into_iter().map(|c| (c, None)).collect()
    };
    if let Some(uuid) = &settings.table_uuid {
        let wanted = normalize_uuid(uuid);
        let mut kept = Vec::new();
        for (c, m) in read {
            let Some(m) = m else { continue };
            let Some(found) = m.table_uuid() else {
                return Err(Error::bad_arguments(format!(
                    "Table UUID is not specified in metadata file '{}' of the Iceberg table at '{location}'",
                    c.path
                )));
            };
            if normalize_uuid(found) == wanted {
                kept.push((c, Some(m)));
            }
        }
        if kept.is_empty() {
            return Err(no_metadata(location, Some(uuid)));
        }
        read = kept;
    }
    let first_family = read.first().map(|(c, _)| c.name.naming.family());
    let mixed = read
        .iter()
        .any(|(c, _)| Some(c.name.naming.family()) != first_family);
    let best = if settings.by_last_updated_ms {
        read.iter()
            .enumerate()
            .max_by_key(|(_, (c, m))| (m.as_ref().map(|m| m.last_updated_ms()), c.version))
    } else {
        read.iter().enumerate().max_by_key(|(_, (c, _))| c.version)
    }
    .map(|(i, _)| i)
    .ok_or_else(|| no_metadata(location, None))?;
    let (candidate, metadata) = read.swap_remove(best);
    let rivals: Vec<Candidate> = read
        .into_iter()
        .map(|(c, _)| c)
        .filter(|c| c.version == candidate.version)
        .collect();
    Ok(Chosen {
        ambiguous: mixed || !rivals.is_empty(),
        candidate,
        metadata,
        rivals,
    })
}

async fn read_all(
    io: &FileIO,
    candidates: Vec<Candidate>,
) -> Result<Vec<(Candidate, Option<TableMetadata>)>> {
    futures::stream::iter(candidates)
        .map(|c| async move {
            let m = read_metadata(io, &c.path).await?;
            Ok::<_, Error>((c, Some(m)))
        })
        .buffered(8)
        .try_collect()
        .await
}

/// Read and parse one metadata file.
pub async fn read_metadata(io: &FileIO, path: &str) -> Result<TableMetadata> {
    let bytes = io.read(path).await?;
    TableMetadata::parse_bytes(bytes, path)
}

/// Names of the files directly under `<location>/metadata/`; none when the folder is missing.
async fn list_metadata_dir(io: &FileIO, location: &str) -> Result<Vec<String>> {
    io.list_names(metadata_dir(location).trim_end_matches('/'))
        .await
}

/// A URI reduced to its path after scheme and authority markers, for prefix comparison of listed
/// URIs (`/t/metadata/x`) with the location's form (`file:///t/metadata`).
/// Whether two locations name the same folder, ignoring scheme (`file://` or none) and slashes.
pub(crate) fn same_place(a: &str, b: &str) -> bool {
    io_relative(a).trim_end_matches('/') == io_relative(b).trim_end_matches('/')
}

fn io_relative(uri: &str) -> String {
    let rest = uri.split_once("://").map_or(uri, |(_, rest)| rest);
    rest.trim_start_matches('/').to_string()
}

fn resolve_explicit(location: &str, explicit: &str) -> Result<String> {
    let outside = || {
        Error::bad_arguments(format!(
            "Explicit metadata file path '{explicit}' should be in the table path directory '{location}'"
        ))
    };
    if explicit.contains("://") || explicit.starts_with('/') {
        let path = io_relative(explicit);
        let root = io_relative(location);
        let under = path
            .strip_prefix(root.as_str())
            .is_some_and(|rest| rest.starts_with('/'));
        return if under {
            Ok(explicit.to_string())
        } else {
            Err(outside())
        };
    }
    let relative = explicit.trim_start_matches("./");
    if relative.split('/').any(|part| part == ".." || part == ".") || relative.is_empty() {
        return Err(outside());
    }
    Ok(format!("{location}/{relative}"))
}

pub(crate) fn normalize_uuid(uuid: &str) -> String {
    uuid.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests;
