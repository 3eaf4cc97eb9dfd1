//! Catalog tables on local disk (`file://` or `/path` locations, e.g. pyiceberg's SqlCatalog
//! behind a REST front end, or a catalog's file storage): served only when the database names
//! the folder they may live in, `SETTINGS storage_local_root = '/abs/path'`. A catalog chooses
//! its tables' locations; without that setting a local location is refused, so no catalog answer
//! can point icetrim at an arbitrary local folder.
//!
//! With the setting, the table's location and its current metadata file must lie under the root
//! (no `..`), and no folder between the root and the table location may be a symbolic link (the
//! root itself is the user's choice, as an `IcebergLocal` path is). Below the table location the
//! local rules of `IcebergLocal` tables hold: listings and deletes never follow a link
//! (`io::local_walk`), and nothing outside the location is deleted.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{Family, Location, is_under, path_key};

/// The setting's name.
pub const SETTING: &str = "storage_local_root";

/// Whether `uri` names a file on local disk.
pub fn is_local(uri: &str) -> bool {
    Location::parse(uri).is_ok_and(|l| l.store.family == Family::File)
}

/// Validates the setting's value: an absolute path (`/x` or `file:///x`) without `..`.
pub fn normalize_root(value: &str) -> Result<String> {
    let path = value
        .strip_prefix("file://")
        .or_else(|| value.strip_prefix("file:"))
        .unwrap_or(value);
    let bad = |why: &str| {
        Error::bad_arguments(format!(
            "Setting {SETTING} must be an absolute local folder (/path or file:///path){why}, got \
             '{value}'"
        ))
    };
    if !path.starts_with('/') {
        return Err(bad(""));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(bad(" without '..'"));
    }
    let trimmed = path.trim_end_matches('/');
    Ok(if trimmed.is_empty() { "/" } else { trimmed }.to_string())
}

/// Checks the local `locations` of `table` (its location and its current metadata file) against
/// the database's `root`; remote locations pass. `database` names the database in the advice.
pub fn check(database: &str, table: &str, root: Option<&str>, locations: &[&str]) -> Result<()> {
    let Some(first_local) = locations.iter().find(|l| is_local(l)) else {
        return Ok(());
    };
    let Some(root) = root else {
        return Err(Error::bad_arguments(format!(
            "Table {table} is on local disk ('{first_local}'): a {} database serves local \
             tables only under the folder it names. Add SETTINGS {SETTING} = '/abs/path' (the \
             folder holding the catalog's warehouse) to CREATE DATABASE {database}",
            super::ENGINE
        )));
    };
    for location in locations.iter().filter(|l| is_local(l)) {
        if !is_under(root, location) {
            return Err(Error::bad_arguments(format!(
                "Table {table}: '{location}' lies outside {SETTING} '{root}' of database \
                 {database}; nothing was done"
            )));
        }
    }
    let table_location = locations[0];
    if let Some(link) = link_between(root, table_location) {
        return Err(Error::bad_arguments(format!(
            "Table {table}: its location '{table_location}' passes through the symbolic link \
             '{link}' below {SETTING} '{root}'; links are never followed there; nothing was done"
        )));
    }
    Ok(())
}

/// The first symbolic link among the folders from below `root` down to `location` (both local).
fn link_between(root: &str, location: &str) -> Option<String> {
    let on_disk = |uri: &str| {
        let key = path_key(uri);
        let encoded = key.strip_prefix("file://")?.to_string();
        let decoded = percent_encoding::percent_decode_str(&encoded)
            .decode_utf8()
            .ok()?;
        Some(decoded.into_owned())
    };
    let (root, location) = (on_disk(root)?, on_disk(location)?);
    let rest = location.strip_prefix(root.trim_end_matches('/'))?;
    let mut path = Path::new(&root).to_path_buf();
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => return Some(path.display().to_string()),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_an_absolute_folder() {
        assert_eq!(normalize_root("/data/wh/").unwrap(), "/data/wh");
        assert_eq!(normalize_root("file:///data/wh").unwrap(), "/data/wh");
        assert!(normalize_root("data/wh").is_err());
        assert!(normalize_root("/data/../etc").is_err());
        assert!(normalize_root("s3://b/wh").is_err());
    }

    #[test]
    fn local_tables_need_the_root_and_stay_under_it() {
        let remote = check(
            "lake",
            "ns.t",
            None,
            &["s3://b/t", "s3://b/t/metadata/v1.json"],
        );
        assert!(remote.is_ok());
        let e = check("lake", "ns.t", None, &["file:///w/t", "file:///w/t/m.json"]).unwrap_err();
        assert!(
            e.message().contains(
                "Add SETTINGS storage_local_root = '/abs/path' (the folder holding the catalog's \
                 warehouse) to CREATE DATABASE lake"
            ),
            "{e}"
        );
        let root = Some("/nonexistent-root/w");
        assert!(
            check(
                "lake",
                "ns.t",
                root,
                &[
                    "file:///nonexistent-root/w/ns/t",
                    "/nonexistent-root/w/ns/t/metadata/1.json"
                ]
            )
            .is_ok()
        );
        for outside in [
            "file:///nonexistent-root/other/t",
            "file:///nonexistent-root/w/../x",
        ] {
            let e = check("lake", "ns.t", root, &[outside]).unwrap_err();
            assert!(
                e.message().contains("lies outside storage_local_root"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_link_between_the_root_and_the_table_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        std::fs::create_dir_all(dir.path().join("real/t")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("ns")).unwrap();
        let linked = format!("file://{root}/ns/t");
        let e = check("lake", "ns.t", Some(&root), &[&linked]).unwrap_err();
        assert!(
            e.message().contains("passes through the symbolic link"),
            "{e}"
        );
        let direct = format!("file://{root}/real/t");
        assert!(check("lake", "ns.t", Some(&root), &[&direct]).is_ok());
    }
}
