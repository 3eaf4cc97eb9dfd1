//! `SET TBLPROPERTIES` / `UNSET TBLPROPERTIES` decisions. Pure.
//!
//! - Values the maintenance code reads are validated on the way in (`BAD_ARGUMENTS` naming the
//!   property): `history.expire.min-snapshots-to-keep` (integer ≥ 1),
//!   `history.expire.max-snapshot-age-ms` and `history.expire.max-ref-age-ms` (integer ms ≥ 0),
//!   exactly as expiry reads them; `write.metadata.previous-versions-max` (integer ≥ 1);
//!   `commit.retry.num-retries`, `commit.retry.min-wait-ms`, `commit.retry.max-wait-ms`,
//!   `commit.retry.total-timeout-ms`, `commit.manifest.min-count-to-merge` (integer ≥ 0);
//!   `commit.manifest.target-size-bytes` (integer ≥ 1); `gc.enabled`,
//!   `write.metadata.delete-after-commit.enabled`, `commit.manifest-merge.enabled` (`true` or
//!   `false`, any case).
//! - Java's reserved properties (`format-version`, `uuid`, `snapshot-count`,
//!   `current-snapshot-id`, `current-snapshot-summary`, `current-snapshot-timestamp-ms`,
//!   `current-schema`, `default-partition-spec`, `default-sort-order`) are refused: they describe
//!   the metadata, they do not configure it.
//! - `UNSET` of a key that is not set is an error unless `IF EXISTS` (Spark 3's rule).
//! - Setting a property to the value it has, or unsetting absent keys with `IF EXISTS`, writes
//!   nothing.

use super::Change;
use super::explain::ExplainRow;
use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::maintain::expire::retention::{TablePolicy, effective_policy};

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

const BOOLEANS: [&str; 3] = [
    "gc.enabled",
    "write.metadata.delete-after-commit.enabled",
    "commit.manifest-merge.enabled",
];

const NON_NEGATIVE: [&str; 5] = [
    "commit.retry.num-retries",
    "commit.retry.min-wait-ms",
    "commit.retry.max-wait-ms",
    "commit.retry.total-timeout-ms",
    "commit.manifest.min-count-to-merge",
];

const POSITIVE: [&str; 2] = [
    "write.metadata.previous-versions-max",
    "commit.manifest.target-size-bytes",
];

fn invalid(key: &str, value: &str, expected: &str) -> Error {
    Error::bad_arguments(format!(
        "Invalid value '{value}' of table property '{key}': expected {expected}"
    ))
}

fn reserved(key: &str) -> Result<()> {
    if RESERVED.contains(&key) {
        return Err(Error::bad_arguments(format!(
            "Table property '{key}' is reserved: it is derived from the metadata and cannot be \
             set or unset"
        )));
    }
    Ok(())
}

/// Check one property value (see the module comment).
pub fn validate_property(key: &str, value: &str) -> Result<()> {
    reserved(key)?;
    if BOOLEANS.contains(&key) {
        let v = value.trim();
        if !(v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false")) {
            return Err(invalid(key, value, "true or false"));
        }
    }
    let integer = || value.parse::<i64>().ok();
    if NON_NEGATIVE.contains(&key) && integer().is_none_or(|n| n < 0) {
        return Err(invalid(
            key,
            value,
            &format!("an integer in range [0, {}]", i64::MAX),
        ));
    }
    if POSITIVE.contains(&key) && integer().is_none_or(|n| n < 1) {
        return Err(invalid(
            key,
            value,
            &format!("an integer in range [1, {}]", i64::MAX),
        ));
    }
    // The retention properties, read exactly as expiry reads them.
    let one = [(key.to_string(), value.to_string())];
    effective_policy(
        TablePolicy::default(),
        one.iter().map(|(k, v)| (k, v)),
        None,
        None,
    )?;
    Ok(())
}

/// `SET TBLPROPERTIES (pairs)`.
pub fn set_properties(metadata: &TableMetadata, pairs: &[(String, String)]) -> Result<Change> {
    for (key, value) in pairs {
        validate_property(key, value)?;
    }
    let mut md = metadata.clone();
    let mut rows = Vec::new();
    for (key, value) in pairs {
        let before = metadata.property(key);
        if before == Some(value.as_str()) {
            continue;
        }
        rows.push(ExplainRow {
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
    for key in keys {
        reserved(key)?;
        if !if_exists && metadata.property(key).is_none() {
            return Err(Error::bad_arguments(format!(
                "Attempted to unset non-existent property '{key}' (use UNSET TBLPROPERTIES IF \
                 EXISTS)"
            )));
        }
    }
    let mut md = metadata.clone();
    let mut rows = Vec::new();
    for key in keys {
        let Some(before) = metadata.property(key) else {
            continue;
        };
        rows.push(ExplainRow {
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
