//! `metadata/version-hint.text`: reading it, following it when it names a file of the table, and
//! the warning when it is garbage, points outside the table or names an older file (a hint is
//! never the basis of a commit).

use super::*;

/// The text of `metadata/version-hint.text`, `None` when it is gone.
pub(super) async fn read_hint(io: &FileIO, location: &str) -> Result<Option<String>> {
    match io.read(&version_hint_path(location)).await {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => Ok(None),
        Err(e) => Err(e),
    }
}

/// Follow the hint `text` when it names the chosen file or one of its same-version rivals (and
/// points into our own `metadata/`). Returns whether the hint settled the choice.
pub(super) fn follow_hint(text: &str, location: &str, chosen: &mut Chosen) -> bool {
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
pub(super) fn hint_points_outside(trimmed: &str, location: &str) -> bool {
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
