//! `SET TBLPROPERTIES` / `UNSET TBLPROPERTIES` decisions. Pure.
//!
//! - Every property icetrim itself reads is checked on the way in with the function that reads
//!   it, on the properties as the statement leaves them ([`values`]: the table of properties,
//!   readers and accepted values): a value `SET` accepts is never refused later, and a refusal is
//!   `BAD_ARGUMENTS` naming the property and the accepted values. Properties icetrim does not
//!   read are accepted (other engines own them).
//! - Java's reserved properties (`format-version`, `uuid`, `snapshot-count`,
//!   `current-snapshot-id`, `current-snapshot-summary`, `current-snapshot-timestamp-ms`,
//!   `current-schema`, `default-partition-spec`, `default-sort-order`) are refused: they describe
//!   the metadata, they do not configure it.
//! - `UNSET` of a key that is not set is an error unless `IF EXISTS` (Spark 3's rule); unsetting
//!   the Parquet codec or level is refused when the other would then be refused.
//! - Setting a property to the value it has, or unsetting absent keys with `IF EXISTS`, writes
//!   nothing. A refused statement writes nothing.

use std::collections::BTreeMap;

use super::Change;
use super::explain::SnapshotExplainRow;
use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;

#[path = "property_values.rs"]
pub mod values;

const RESERVED: [&str; 9] = [
    "format-version",
    "uuid",
    "snapshot-count",
    "current-snapshot-id",
    "current-snapshot-summary",
    "current-snapshot-timestamp-ms",
    "current-schema",
    "default-partition-spec",
    "default-sort-order",
];

fn reserved(key: &str) -> Result<()> {
    if RESERVED.contains(&key) {
        return Err(Error::bad_arguments(format!(
            "Table property '{key}' is reserved: it is derived from the metadata and cannot be \
             set or unset"
        )));
    }
    Ok(())
}

/// Check one property value on its own (see [`values`]).
pub fn validate_property(key: &str, value: &str) -> Result<()> {
    reserved(key)?;
    let one = BTreeMap::from([(key.to_string(), value.to_string())]);
    values::check_set(key, &one)
}

/// `SET TBLPROPERTIES (pairs)`.
pub fn set_properties(metadata: &TableMetadata, pairs: &[(String, String)]) -> Result<Change> {
    let mut after = metadata.properties().clone();
    for (key, value) in pairs {
        reserved(key)?;
        after.insert(key.clone(), value.clone());
    }
    for (key, _) in pairs {
        values::check_set(key, &after)?;
    }
    let mut md = metadata.clone();
    let mut rows = Vec::new();
    for (key, value) in pairs {
        let before = metadata.property(key);
        if before == Some(value.as_str()) {
            continue;
        }
        rows.push(SnapshotExplainRow {
            kind: "property".into(),
            name: key.clone(),
            before: before.map(str::to_string),
            after: Some(value.clone()),
            detail: if before.is_some() { "changed" } else { "set" }.into(),
        });
        md.set_property(key, value)?;
    }
    Ok(Change::edit(md, rows))
}

/// `UNSET TBLPROPERTIES [IF EXISTS] (keys)`.
pub fn unset_properties(
    metadata: &TableMetadata,
    keys: &[String],
    if_exists: bool,
) -> Result<Change> {
    let before = metadata.properties();
    let mut after = before.clone();
    for key in keys {
        reserved(key)?;
        if !if_exists && metadata.property(key).is_none() {
            return Err(Error::bad_arguments(format!(
                "Attempted to unset non-existent property '{key}' (use UNSET TBLPROPERTIES IF \
                 EXISTS)"
            )));
        }
        after.remove(key);
    }
    for key in keys {
        values::check_unset(key, before, &after)?;
    }
    let mut md = metadata.clone();
    let mut rows = Vec::new();
    for key in keys {
        let Some(before) = metadata.property(key) else {
            continue;
        };
        rows.push(SnapshotExplainRow {
            kind: "property".into(),
            name: key.clone(),
            before: Some(before.to_string()),
            after: None,
            detail: "unset".into(),
        });
        md.remove_property(key)?;
    }
    Ok(Change::edit(md, rows))
}
