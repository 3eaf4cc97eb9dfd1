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
    let listing = list_metadata_dir(io, &location).await?;
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
        if listing.is_empty() {
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

/// The text of `metadata/version-hint.text`, `None` when it is gone.
async fn read_hint(io: &FileIO, location: &str) -> Result<Option<String>> {
    match io.read(&version_hint_path(location)).await {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => Ok(None),
        Err(e) => Err(e),
    }
}

/// Follow the hint `text` when it names the chosen file or one of its same-version rivals (and
/// points into our own `metadata/`). Returns whether the hint settled the choice.
fn follow_hint(text: &str, location: &str, chosen: &mut Chosen) -> bool {
    if hint_points_outside(text.trim(), location) {
        return false;
    }
    let hinted = hinted_file_name(text);
    if file_name(&chosen.candidate.path) == hinted {
        return true;
    }
    let Some(pos) = chosen
        .rivals
        .iter()
        .position(|c| file_name(&c.path) == hinted)
    else {
        return false;
    };
    let rival = chosen.rivals.swap_remove(pos);
    let previous = std::mem::replace(&mut chosen.candidate, rival);
    chosen.rivals.push(previous);
    chosen.metadata = None;
    true
}

/// Whether a hint with a path (`/t/metadata/v3.metadata.json`, `metadata/v3.metadata.json`,
/// relative to the table) names a file outside the table's own `metadata/` folder.
fn hint_points_outside(trimmed: &str, location: &str) -> bool {
    if !trimmed.contains('/') {
        return false;
    }
    let full = if trimmed.contains("://") || trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("{location}/{trimmed}")
    };
    let dir = full.rsplit_once('/').map_or("", |(dir, _)| dir);
    trimmed.split('/').any(|c| c == ".." || c == ".") || !same_place(dir, &metadata_dir(location))
}

/// A warning about the version hint `text` of the table at `location`, whose newest metadata
/// file is `newest` (version `newest_version`) among the files `listing` of `metadata/`: a hint
/// that is garbage, points outside the table's `metadata/`, or names a missing or older file.
/// Such a hint is never followed; the warning says so, because readers that trust hints
/// (ClickHouse with `iceberg_use_version_hint`, Java Hadoop tables) would read something else.
pub fn hint_warning(
    text: &str,
    location: &str,
    newest: &str,
    newest_version: u64,
    listing: &[String],
) -> Option<String> {
    let trimmed = text.trim();
    let shown: String = trimmed.chars().take(120).collect();
    let head = format!(
        "metadata/version-hint.text of the Iceberg table at '{location}' holds {shown:?}, which"
    );
    let tail = format!(
        "; it is ignored and the newest metadata file '{}' is used (readers that follow the \
         hint may see another version)",
        file_name(newest)
    );
    let hinted = hinted_file_name(trimmed);
    let Some(version) = parse_file_name(&hinted).and_then(|n| n.version) else {
        return Some(format!("{head} names no metadata file{tail}"));
    };
    if hint_points_outside(trimmed, location) {
        return Some(format!(
            "{head} points outside the table's metadata folder{tail}"
        ));
    }
    if !listing.contains(&hinted) {
        return Some(format!(
            "{head} names '{hinted}', which does not exist{tail}"
        ));
    }
    if version < newest_version {
        return Some(format!(
            "{head} names '{hinted}' (version {version}), older than the newest metadata file \
             (version {newest_version}){tail}"
        ));
    }
    None
}

/// The file name a version hint stands for, as ClickHouse reads it: `N` → `vN.metadata.json`;
/// a name ending `.metadata.json` → that name; anything else gets `.metadata.json` appended.
pub fn hinted_file_name(hint: &str) -> String {
    let hint = file_name(hint.trim());
    if MetadataCompression::from_file_name(hint).is_some() {
        hint.to_string()
    } else if !hint.is_empty() && hint.bytes().all(|b| b.is_ascii_digit()) {
        format!("v{hint}.metadata.json")
    } else {
        format!("{hint}.metadata.json")
    }
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
    TableMetadata::parse(&bytes, path)
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

/// How many folders [`tables_below`] lists at most, and how many tables it names.
const FOLDERS_LISTED: usize = 64;
const TABLES_NAMED: usize = 10;

/// The tables one or two folder levels below `location` (a folder holding a `metadata/` folder),
/// for a location that is a warehouse or a namespace rather than a table. Bounded: at most
/// [`FOLDERS_LISTED`] folder listings, [`TABLES_NAMED`] tables, in name order.
async fn tables_below(io: &FileIO, location: &str) -> Vec<String> {
    let mut tables = Vec::new();
    let mut listings = 1;
    let mut pending: Vec<(String, usize)> = io
        .folder_names(location, FOLDERS_LISTED)
        .await
        .into_iter()
        .rev()
        .map(|name| (format!("{location}/{name}"), 1))
        .collect();
    while let Some((folder, depth)) = pending.pop() {
        if tables.len() >= TABLES_NAMED || listings >= FOLDERS_LISTED {
            break;
        }
        listings += 1;
        let children = io.folder_names(&folder, FOLDERS_LISTED).await;
        if children.iter().any(|c| c == "metadata") {
            tables.push(folder);
        } else if depth < 2 {
            pending.extend(
                children
                    .into_iter()
                    .rev()
                    .map(|name| (format!("{folder}/{name}"), depth + 1)),
            );
        }
    }
    tables
}

/// What to say when `location` has no `metadata/` folder, given the tables found below it.
fn warehouse_hint(location: &str, below: &[String]) -> String {
    match below {
        [] => String::new(),
        [first, ..] => format!(
            ". There is no metadata/ folder in '{location}'; tables below it: {}{}. Give the \
             table's own folder, e.g. '{first}'",
            below
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(", "),
            if below.len() >= TABLES_NAMED {
                ", ..."
            } else {
                ""
            }
        ),
    }
}

/// For a table whose metadata names files outside its `location`: when every one of `outside`
/// lies in one other table folder (the part before its `/metadata/` or `/data/`), the question
/// that explains it, as a sentence to append to the refusal; otherwise nothing.
pub fn copied_or_moved_hint<S: AsRef<str>>(location: &str, outside: &[S]) -> String {
    let root_of = |uri: &str| {
        ["/metadata/", "/data/"]
            .iter()
            .filter_map(|marker| uri.rfind(marker).map(|at| uri[..at].to_string()))
            .min_by_key(String::len)
    };
    let mut roots = outside.iter().map(|uri| root_of(uri.as_ref()));
    let Some(Some(first)) = roots.next() else {
        return String::new();
    };
    if roots.any(|root| root.as_deref() != Some(first.as_str())) || same_place(&first, location) {
        return String::new();
    }
    format!(
        ". Its manifests point at '{first}': was the table copied or moved? Its metadata still \
         names the files where they were written; maintain the table there (register \
         '{first}'), or rewrite its paths for the new place first"
    )
}

fn no_metadata(location: &str, uuid: Option<&String>) -> Error {
    let message = match uuid {
        Some(uuid) => format!(
            "The metadata file for Iceberg table with path {location} and table UUID {uuid} doesn't exist"
        ),
        None => format!("The metadata file for Iceberg table with path {location} doesn't exist"),
    };
    Error::new(ErrorKind::FileDoesntExist, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e";

    fn metadata_with_log(log: &[&str]) -> TableMetadata {
        let entries: Vec<serde_json::Value> = log
            .iter()
            .map(|f| serde_json::json!({"metadata-file": f, "timestamp-ms": 1}))
            .collect();
        let doc = serde_json::json!({
            "format-version": 2, "table-uuid": UUID, "location": "/t",
            "last-sequence-number": 0, "last-updated-ms": 0, "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"}]}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "metadata-log": entries
        });
        TableMetadata::parse(doc.to_string().as_bytes(), "/t/metadata/x.metadata.json").unwrap()
    }

    #[test]
    fn a_fork_is_a_second_file_of_the_current_version() {
        let file = |v: u64, id: &str| format!("/t/metadata/{v:05}-{id}.metadata.json");
        let a = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8a";
        let b = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8b";
        let versions = |list: &[(u64, &str)]| {
            list.iter()
                .map(|(v, id)| (*v, file(*v, id)))
                .collect::<Vec<_>>()
        };
        // icetrim committed 4 by path; the catalog's writer committed its own 4 on 3.
        let forked = versions(&[(3, a), (4, a), (4, b)]);
        let log = [file(3, a)];
        let log: Vec<&str> = log.iter().map(String::as_str).collect();
        let fork = find_fork(&forked, &file(4, a), &metadata_with_log(&log)).expect("a fork");
        assert_eq!(
            fork,
            Fork {
                version: 4,
                ours: file(4, a),
                theirs: file(4, b)
            }
        );
        // A straight history has none; nor has a second file of an older version (a writer that
        // lost a commit race leaves one).
        let straight = versions(&[(3, a), (4, a)]);
        let lost_race = versions(&[(3, a), (3, b), (4, a)]);
        for all in [straight, lost_race] {
            assert_eq!(find_fork(&all, &file(4, a), &metadata_with_log(&log)), None);
        }
    }

    #[test]
    fn a_copied_table_is_named_as_such() {
        let outside = [
            "file:///w/db/t/metadata/snap-1.avro",
            "file:///w/db/t/data/a.parquet",
            "file:///w/db/t/data/p=1/metadata/b.parquet",
        ];
        let hint = copied_or_moved_hint("/copy/t", &outside);
        assert!(
            hint.starts_with(
                ". Its manifests point at 'file:///w/db/t': was the table copied or moved?"
            ),
            "{hint}"
        );
        assert_eq!(copied_or_moved_hint("/copy/t", &["s3://b/x.parquet"]), "");
        let mixed = ["s3://b/t1/data/a.parquet", "s3://b/t2/data/a.parquet"];
        assert_eq!(copied_or_moved_hint("s3://b/t", &mixed), "");
        assert_eq!(copied_or_moved_hint::<&str>("s3://b/t", &[]), "");
    }

    #[test]
    fn a_warehouse_hint_names_the_tables_below() {
        assert_eq!(warehouse_hint("/w", &[]), "");
        let hint = warehouse_hint("/w", &["/w/db/a".to_string(), "/w/db/b".to_string()]);
        assert_eq!(
            hint,
            ". There is no metadata/ folder in '/w'; tables below it: '/w/db/a', '/w/db/b'. Give \
             the table's own folder, e.g. '/w/db/a'"
        );
    }

    #[tokio::test]
    async fn tables_are_found_two_levels_down_and_no_further() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        for table in ["db/a", "db/b", "c", "x/y/z"] {
            std::fs::create_dir_all(dir.path().join(table).join("metadata")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        let io = FileIO::local();
        let found = tables_below(&io, &root).await;
        assert_eq!(
            found,
            [
                format!("{root}/c"),
                format!("{root}/db/a"),
                format!("{root}/db/b")
            ]
        );
        let error = locate(&io, &root, &MetadataSettings::default())
            .await
            .unwrap_err();
        assert!(
            error
                .message()
                .contains(&format!("tables below it: '{root}/c', '{root}/db/a'")),
            "{error}"
        );
    }

    #[test]
    fn file_names() {
        let v = parse_file_name("/t/metadata/v12.metadata.json").unwrap();
        assert_eq!((v.version, v.naming), (Some(12), NamingScheme::Versioned));
        let v = parse_file_name(&format!("v3-{UUID}.gz.metadata.json")).unwrap();
        assert_eq!(v.naming, NamingScheme::VersionedUuid);
        assert_eq!(v.compression, MetadataCompression::GzipInfix);
        let v = parse_file_name(&format!("00042-{UUID}.metadata.json.gz")).unwrap();
        assert_eq!(
            (v.version, v.naming),
            (Some(42), NamingScheme::Sequenced { width: 5 })
        );
        for bad in [
            format!("{UUID}.metadata.json"),
            "v.metadata.json".into(),
            "vx.metadata.json".into(),
            "v1.json".into(),
            "1-notauuid.metadata.json".into(),
            "v99999999999999999999999.metadata.json".into(),
        ] {
            assert_eq!(parse_file_name(&bad), None, "{bad}");
        }
    }

    #[test]
    fn hint_names() {
        assert_eq!(hinted_file_name("7\n"), "v7.metadata.json");
        assert_eq!(
            hinted_file_name("t/metadata/v7.gz.metadata.json"),
            "v7.gz.metadata.json"
        );
        assert_eq!(
            hinted_file_name(&format!("00003-{UUID}")),
            format!("00003-{UUID}.metadata.json")
        );
    }

    /// Every kind of hint warning reads as one sentence: no run of spaces (a line continuation
    /// that kept its indentation once put ten spaces into each of them).
    #[test]
    fn hint_warnings_have_no_runs_of_spaces() {
        let listing: Vec<String> = ["v1.metadata.json", "v2.metadata.json"]
            .map(String::from)
            .to_vec();
        let newest = "/t/metadata/v2.metadata.json";
        let warn = |hint: &str| hint_warning(hint, "/t", newest, 2, &listing);
        let cases = [
            ("garbage text", "names no metadata file"),
            ("/elsewhere/metadata/v2.metadata.json", "points outside"),
            ("7", "does not exist"),
            ("1", "older than the newest metadata file"),
        ];
        for (hint, says) in cases {
            let w = warn(hint).unwrap_or_else(|| panic!("no warning for {hint:?}"));
            assert!(w.contains(says), "{hint:?}: {w}");
            assert!(w.contains("readers that follow the hint may see"), "{w}");
            assert!(!w.contains("  "), "a run of spaces in {w:?}");
        }
        assert_eq!(warn("2"), None);
    }

    #[test]
    fn explicit_paths() {
        assert_eq!(
            resolve_explicit("/t", "metadata/v2.metadata.json").unwrap(),
            "/t/metadata/v2.metadata.json"
        );
        assert!(resolve_explicit("/t", "../x/v2.metadata.json").is_err());
        assert!(resolve_explicit("/t", "/other/v2.metadata.json").is_err());
        assert!(resolve_explicit("file:///t", "/t/metadata/v2.metadata.json").is_ok());
    }

    #[test]
    fn uuid_normalisation() {
        assert_eq!(normalize_uuid("AB-cd"), normalize_uuid("abcd"));
    }
}
