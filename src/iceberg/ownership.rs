//! Whether a path table looks owned by a catalog, and the warning a commit by path gets then.
//!
//! A catalog (pyiceberg's SqlCatalog, the Java catalogs: REST, Hive, Glue, JDBC, Nessie) keeps the
//! pointer to a table's current metadata itself and names each metadata file
//! `NNNNN-<uuid>.metadata.json`; it writes no `version-hint.text`. Path writers (Hadoop tables,
//! ClickHouse, icetrim creating a table) name files `v<N>.metadata.json` and find the current one
//! by listing or by the hint. So the signs of a catalog-written table are: the current file is
//! `NNNNN-<uuid>.metadata.json`, and there is no `version-hint.text`. A commit by path to such a
//! table is invisible to the catalog, whose next commit writes a second file of the same version
//! (a fork). Such tables are still maintained by path (ClickHouse does so, and pyiceberg-written
//! test tables have exactly this shape): the commit goes ahead with a warning, which the session
//! shows once per table and the setting `iceberg_warn_catalog_owned_tables = 0` silences.

use super::locate::{NamingScheme, metadata_dir, parse_file_name};
use crate::io::FileIO;

/// How the warning starts: the session finds (and silences, or shows once) it by this text.
pub const WARNING_PREFIX: &str = "Table looks owned by a catalog";

/// Whether the path table at `location` has the signs, from one listing of its `metadata/`:
/// its newest versioned metadata file is `NNNNN-<uuid>.metadata.json` and there is no
/// `version-hint.text`. A listing that fails says nothing (the statement itself reports it).
pub async fn looks_catalog_owned_at(io: &FileIO, location: &str) -> bool {
    let dir = metadata_dir(location);
    let Ok(names) = io.list_names(dir.trim_end_matches('/')).await else {
        return false;
    };
    signs_in_listing(&names)
}

/// [`looks_catalog_owned_at`] on the names of `metadata/`.
fn signs_in_listing(names: &[String]) -> bool {
    if names.iter().any(|n| n == "version-hint.text") {
        return false;
    }
    let newest = names
        .iter()
        .filter_map(|n| parse_file_name(n))
        .filter_map(|n| Some((n.version?, n.naming)))
        .max_by_key(|(version, _)| *version);
    matches!(newest, Some((_, NamingScheme::Sequenced { .. })))
}

/// The warning for a commit by path to the catalog-written table at `location`.
pub fn catalog_owned_warning(location: &str) -> String {
    format!(
        "{WARNING_PREFIX}: '{location}' has NNNNN-<uuid>.metadata.json files and no \
         version-hint.text, as catalogs write them. A commit by path is not seen by the catalog, \
         and the catalog's next commit would fork the table (a second metadata file of the same \
         version). If a catalog owns it, maintain it through that catalog (CREATE DATABASE ... \
         ENGINE = DataLakeCatalog(...)); SET iceberg_warn_catalog_owned_tables = 0 silences this"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_starts_with_its_prefix() {
        assert!(catalog_owned_warning("/t").starts_with(WARNING_PREFIX));
    }

    #[test]
    fn the_listing_shows_the_signs() {
        let uuid = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e";
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let catalog = format!("00002-{uuid}.metadata.json");
        let older = format!("00001-{uuid}.metadata.json");
        assert!(signs_in_listing(&names(&[&older, &catalog, "snap-1.avro"])));
        assert!(!signs_in_listing(&names(&[&catalog, "version-hint.text"])));
        assert!(!signs_in_listing(&names(&[
            "v1.metadata.json",
            "v2.metadata.json"
        ])));
        // A path writer took over after the catalog: the newest file decides.
        assert!(!signs_in_listing(&names(&[&catalog, "v3.metadata.json"])));
        assert!(!signs_in_listing(&[]));
    }
}
