//! Which values `SET TBLPROPERTIES` accepts for the table properties icetrim itself reads. Pure.
//!
//! Each such property is checked with the very function that reads it later (owned by the code
//! that reads it), on the table's properties as the statement leaves them, so a value accepted
//! here is never refused by a later statement. A refusal is `BAD_ARGUMENTS` naming the property,
//! the value and the accepted values, and nothing is committed. Properties icetrim does not read
//! are accepted whatever their value (other engines own them), except a few of Java's whose type
//! is checked (`commit.retry.*`, `commit.manifest.min-count-to-merge`,
//! `commit.manifest-merge.enabled`).
//!
//! | property | read by | accepted |
//! |---|---|---|
//! | `history.expire.min-snapshots-to-keep` | expiry's policy ([`effective_policy`]) | integer in [1, 2^31−1] |
//! | `history.expire.max-snapshot-age-ms`, `history.expire.max-ref-age-ms` | the same | integer in [0, 2^63−1] |
//! | `write.metadata.previous-versions-max` | every commit ([`parse_previous_versions_max`]) | integer ≥ 0 |
//! | `commit.manifest.target-size-bytes` | `rewrite_manifests` ([`target_size`]) | integer ≥ 1 |
//! | `write.target-file-size-bytes` | compaction ([`Resolved::new`]) | integer ≥ 2 (the default minimum and maximum file sizes must differ from it) |
//! | `write.parquet.compression-codec`, `…compression-level` | compaction's writer ([`writer_properties`]), read together | `zstd` (levels 1 to 22), `gzip` (up to 9), `snappy`, `uncompressed` |
//! | `write.parquet.row-group-size-bytes`, `…page-size-bytes`, `…page-row-limit`, `…dict-size-bytes` | the same | integer ≥ 1 |
//! | `write.metadata.metrics.default`, `write.metadata.metrics.column.<path>` | compaction's metrics ([`MetricsMode::parse`]) | `none`, `counts`, `full`, `truncate(N)` |
//! | `gc.enabled`, `write.metadata.delete-after-commit.enabled` | expiry, orphans, commits (only `true` counts) | `true` or `false`, any case |
//!
//! The codec and the level are read together: setting one is checked against the other as the
//! table keeps it, and unsetting one is refused when the other would then be refused (a gzip
//! level of 0 is no zstd level).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::iceberg::metadata::parse_previous_versions_max;
use crate::maintain::compact::plan::Resolved;
use crate::maintain::compact::stats::MetricsMode;
use crate::maintain::compact::writer::writer_properties;
use crate::maintain::expire::retention::{TablePolicy, effective_policy};
use crate::maintain::rewrite_manifests::decide::target_size;
use crate::plan::CompactOptions;

type Properties = BTreeMap<String, String>;

const CODEC: &str = "write.parquet.compression-codec";
const LEVEL: &str = "write.parquet.compression-level";

/// How one property (or a family sharing a prefix) is read.
struct Rule {
    /// The property name, or with `prefix` the start of every name of the family.
    name: &'static str,
    prefix: bool,
    /// The accepted values, as the refusal states them.
    accepted: &'static str,
    /// Reads the property `key` of `properties` exactly as icetrim reads it.
    read: fn(key: &str, properties: &Properties) -> Result<()>,
}

impl Rule {
    fn covers(&self, key: &str) -> bool {
        match self.prefix {
            true => key.starts_with(self.name) && key.len() > self.name.len(),
            false => key == self.name,
        }
    }
}

const fn rule(
    name: &'static str,
    accepted: &'static str,
    read: fn(&str, &Properties) -> Result<()>,
) -> Rule {
    Rule {
        name,
        prefix: false,
        accepted,
        read,
    }
}

const RETENTION_MIN: &str = "an integer in range [1, 2147483647]";
const RETENTION_AGE: &str = "an integer number of milliseconds in range [0, 9223372036854775807]";
const CODECS: &str = "zstd, snappy, gzip or uncompressed";
const LEVELS: &str = "an integer the codec takes (zstd: 1 to 22, gzip: up to 9)";
const POSITIVE: &str = "an integer in range [1, 18446744073709551615]";
const METRICS: &str = "none, counts, full or truncate(N) with N >= 1";
const BOOLEAN: &str = "true or false";
const NON_NEGATIVE: &str = "an integer in range [0, 9223372036854775807]";

const RULES: &[Rule] = &[
    rule(
        "history.expire.min-snapshots-to-keep",
        RETENTION_MIN,
        retention,
    ),
    rule(
        "history.expire.max-snapshot-age-ms",
        RETENTION_AGE,
        retention,
    ),
    rule("history.expire.max-ref-age-ms", RETENTION_AGE, retention),
    rule(
        "write.metadata.previous-versions-max",
        "a non-negative integer",
        previous_versions,
    ),
    rule(
        "commit.manifest.target-size-bytes",
        "a positive integer (bytes)",
        manifest_target,
    ),
    rule(
        "write.target-file-size-bytes",
        "an integer number of bytes of at least 2",
        file_target,
    ),
    rule(CODEC, CODECS, codec_and_level),
    rule(LEVEL, LEVELS, codec_and_level),
    rule("write.parquet.row-group-size-bytes", POSITIVE, parquet_size),
    rule("write.parquet.page-size-bytes", POSITIVE, parquet_size),
    rule("write.parquet.page-row-limit", POSITIVE, parquet_size),
    rule("write.parquet.dict-size-bytes", POSITIVE, parquet_size),
    rule("write.metadata.metrics.default", METRICS, metrics_mode),
    Rule {
        name: "write.metadata.metrics.column.",
        prefix: true,
        accepted: METRICS,
        read: metrics_mode,
    },
    rule("gc.enabled", BOOLEAN, boolean),
    rule(
        "write.metadata.delete-after-commit.enabled",
        BOOLEAN,
        boolean,
    ),
    // Not read by icetrim; Java's types.
    rule("commit.manifest-merge.enabled", BOOLEAN, boolean),
    rule("commit.retry.num-retries", NON_NEGATIVE, non_negative),
    rule("commit.retry.min-wait-ms", NON_NEGATIVE, non_negative),
    rule("commit.retry.max-wait-ms", NON_NEGATIVE, non_negative),
    rule("commit.retry.total-timeout-ms", NON_NEGATIVE, non_negative),
    rule(
        "commit.manifest.min-count-to-merge",
        NON_NEGATIVE,
        non_negative,
    ),
];

fn value<'a>(key: &str, properties: &'a Properties) -> &'a str {
    properties.get(key).map_or("", String::as_str)
}

fn retention(key: &str, properties: &Properties) -> Result<()> {
    let one = properties.get_key_value(key);
    effective_policy(TablePolicy::default(), one, None, None).map(drop)
}

fn previous_versions(key: &str, properties: &Properties) -> Result<()> {
    parse_previous_versions_max(value(key, properties)).map(drop)
}

fn manifest_target(key: &str, properties: &Properties) -> Result<()> {
    let one: Properties = properties
        .get_key_value(key)
        .map(clone_pair)
        .into_iter()
        .collect();
    target_size(None, &one).map(drop)
}

fn file_target(key: &str, properties: &Properties) -> Result<()> {
    Resolved::new(&CompactOptions::default(), Some(value(key, properties))).map(drop)
}

/// The writer reads the codec and its level together: both, as the table holds them.
fn codec_and_level(_key: &str, properties: &Properties) -> Result<()> {
    let both: Properties = [CODEC, LEVEL]
        .iter()
        .filter_map(|k| properties.get_key_value(*k))
        .map(clone_pair)
        .collect();
    writer_properties(&both).map(drop)
}

fn parquet_size(key: &str, properties: &Properties) -> Result<()> {
    let one: Properties = properties
        .get_key_value(key)
        .map(clone_pair)
        .into_iter()
        .collect();
    writer_properties(&one).map(drop)
}

fn metrics_mode(key: &str, properties: &Properties) -> Result<()> {
    MetricsMode::parse(value(key, properties)).map(drop)
}

/// The readers take only `true` (any case) as true; anything else would silently mean false.
fn boolean(key: &str, properties: &Properties) -> Result<()> {
    let v = value(key, properties).trim();
    match v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false") {
        true => Ok(()),
        false => Err(Error::bad_arguments("not a boolean")),
    }
}

fn non_negative(key: &str, properties: &Properties) -> Result<()> {
    match value(key, properties).parse::<i64>() {
        Ok(n) if n >= 0 => Ok(()),
        _ => Err(Error::bad_arguments("not a non-negative integer")),
    }
}

fn clone_pair((k, v): (&String, &String)) -> (String, String) {
    (k.clone(), v.clone())
}

/// The refusal of `value` for `key`: the reader's own message when it already names the property
/// and the accepted values, else one that does, followed by the reader's reason.
fn refusal(key: &str, value: &str, accepted: &str, reason: &Error) -> Error {
    let standard = format!("Invalid value '{value}' of table property '{key}'");
    if reason.message().starts_with(&standard) {
        return Error::bad_arguments(reason.message());
    }
    let why = match reason.message() {
        "not a boolean" | "not a non-negative integer" => String::new(),
        other => format!("; {other}"),
    };
    Error::bad_arguments(format!("{standard}: expected {accepted}{why}"))
}

/// Check the property `key`, set in `after` (the table's properties as the statement leaves
/// them), as icetrim reads it; properties icetrim does not read pass.
pub fn check_set(key: &str, after: &Properties) -> Result<()> {
    let Some(rule) = RULES.iter().find(|r| r.covers(key)) else {
        return Ok(());
    };
    (rule.read)(key, after).map_err(|e| refusal(key, value(key, after), rule.accepted, &e))
}

/// Check that unsetting `key` (absent from `after`, present in `before`) leaves nothing icetrim
/// would refuse that it accepted before: the codec and level are read together.
pub fn check_unset(key: &str, before: &Properties, after: &Properties) -> Result<()> {
    let partner = match key {
        CODEC => LEVEL,
        LEVEL => CODEC,
        _ => return Ok(()),
    };
    if !after.contains_key(partner) || codec_and_level(partner, before).is_err() {
        return Ok(());
    }
    codec_and_level(partner, after).map_err(|e| {
        Error::bad_arguments(format!(
            "Cannot unset table property '{key}': the table's '{partner}' = '{}' would then be \
             refused ({})",
            value(partner, after),
            e.message()
        ))
    })
}

#[cfg(test)]
#[path = "property_values_tests.rs"]
mod tests;
