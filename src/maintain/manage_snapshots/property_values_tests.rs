use proptest::prelude::*;
use serde_json::json;

use super::super::{set_properties, unset_properties};
use super::*;
use crate::error::ErrorKind;
use crate::iceberg::metadata::TableMetadata;
use crate::maintain::compact::stats::leaf_infos;

fn table(props: serde_json::Value) -> TableMetadata {
    let doc = json!({
        "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t", "last-sequence-number": 0, "last-updated-ms": 1,
        "last-column-id": 1, "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0,
                     "fields": [{"id": 1, "name": "s", "required": false, "type": "string"}]}],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999, "properties": props, "current-snapshot-id": -1,
        "snapshots": [], "snapshot-log": [], "metadata-log": [],
    });
    TableMetadata::parse(doc.to_string().as_bytes(), "v1.metadata.json").unwrap()
}

fn set(md: &TableMetadata, key: &str, value: &str) -> Result<TableMetadata> {
    let change = set_properties(md, &[(key.to_string(), value.to_string())])?;
    Ok(change.metadata.unwrap_or_else(|| md.clone()))
}

/// Every later reader of the table's properties, as the procedures call them.
fn read_all(md: &TableMetadata) -> Result<()> {
    let props = md.properties();
    effective_policy(TablePolicy::default(), props, None, None)?;
    md.previous_versions_max()?;
    target_size(None, props)?;
    Resolved::new(
        &CompactOptions::optimize(),
        md.property("write.target-file-size-bytes"),
    )?;
    writer_properties(props)?;
    leaf_infos(
        &json!({"fields": [{"id": 1, "name": "s", "type": "string"}]}),
        props,
    )?;
    Ok(())
}

/// The values the task names, and one refused value per property icetrim reads: each is
/// refused with `BAD_ARGUMENTS` naming the property and what it accepts, and nothing changes.
#[test]
fn values_icetrim_would_refuse_later_are_refused_now() {
    let md = table(json!({}));
    let refused = [
        ("write.target-file-size-bytes", "-1", "at least 2"),
        ("write.target-file-size-bytes", "1", "at least 2"),
        (
            "write.parquet.compression-codec",
            "lz4",
            "zstd, snappy, gzip or uncompressed",
        ),
        (
            "write.parquet.compression-codec",
            "brotli",
            "zstd, snappy, gzip or uncompressed",
        ),
        ("write.parquet.compression-level", "23", "zstd: 1 to 22"),
        ("write.parquet.compression-level", "high", "zstd: 1 to 22"),
        ("write.parquet.row-group-size-bytes", "0", "[1, "),
        ("write.parquet.page-size-bytes", "-5", "[1, "),
        ("write.parquet.page-row-limit", "many", "[1, "),
        ("write.parquet.dict-size-bytes", "1.5", "[1, "),
        (
            "write.metadata.metrics.default",
            "truncate(0)",
            "truncate(N)",
        ),
        ("write.metadata.metrics.column.s", "some", "truncate(N)"),
        (
            "write.metadata.previous-versions-max",
            "-1",
            "non-negative integer",
        ),
        ("commit.manifest.target-size-bytes", "0", "positive integer"),
        (
            "history.expire.min-snapshots-to-keep",
            "0",
            "[1, 2147483647]",
        ),
        (
            "history.expire.max-snapshot-age-ms",
            "-1",
            "[0, 9223372036854775807]",
        ),
        (
            "history.expire.max-ref-age-ms",
            "1d",
            "[0, 9223372036854775807]",
        ),
        ("gc.enabled", "yes", "true or false"),
        (
            "write.metadata.delete-after-commit.enabled",
            "1",
            "true or false",
        ),
        ("commit.retry.num-retries", "-3", "[0, "),
    ];
    for (key, bad, accepted) in refused {
        let e = set(&md, key, bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments, "{key} = {bad}: {e}");
        let m = e.message();
        assert!(
            m.starts_with(&format!(
                "Invalid value '{bad}' of table property '{key}': expected"
            )),
            "{m}"
        );
        assert!(m.contains(accepted), "{key} = {bad}: {m}");
    }
}

#[test]
fn values_icetrim_reads_and_unknown_properties_pass() {
    let md = table(json!({}));
    for (key, good) in [
        ("write.target-file-size-bytes", "2"),
        ("write.target-file-size-bytes", " 134217728 "),
        ("write.parquet.compression-codec", "GZIP"),
        ("write.parquet.compression-codec", "uncompressed"),
        ("write.parquet.compression-level", "22"),
        ("write.parquet.page-row-limit", "1"),
        ("write.metadata.metrics.default", "Truncate(8)"),
        ("write.metadata.metrics.column.s", "counts"),
        ("write.metadata.previous-versions-max", "0"),
        ("commit.manifest.target-size-bytes", "1"),
        ("gc.enabled", "FALSE"),
        ("write.parquet.bloom-filter-enabled.column.s", "maybe"),
        ("write.metadata.metrics.column.", "anything"),
        ("owner", "-1"),
    ] {
        let after = set(&md, key, good).unwrap_or_else(|e| panic!("{key} = {good}: {e}"));
        read_all(&after).unwrap_or_else(|e| panic!("{key} = {good} is read back: {e}"));
    }
}

/// The codec and its level are read together: a level is checked against the table's codec, a
/// codec against the table's level, and an UNSET that would leave a refused pair is refused.
#[test]
fn codec_and_level_are_checked_together() {
    let gzip = table(json!({"write.parquet.compression-codec": "gzip"}));
    assert!(set(&gzip, LEVEL, "9").is_ok());
    let e = set(&gzip, LEVEL, "12").unwrap_err();
    assert!(
        e.message().contains(LEVEL) && e.message().contains("12"),
        "{e}"
    );
    let zstd_15 = table(json!({"write.parquet.compression-level": "15"}));
    let e = set(&zstd_15, CODEC, "gzip").unwrap_err();
    assert!(
        e.message().contains(&format!("table property '{CODEC}'")),
        "{e}"
    );
    assert!(
        set_properties(
            &zstd_15,
            &[(CODEC.into(), "gzip".into()), (LEVEL.into(), "9".into())]
        )
        .is_ok()
    );
    // gzip level 0 is no zstd level: the codec cannot go alone; the level can.
    let gzip_0 = table(
        json!({"write.parquet.compression-codec": "gzip", "write.parquet.compression-level": "0"}),
    );
    let e = unset_properties(&gzip_0, &[CODEC.into()], false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArguments);
    assert!(
        e.message()
            .starts_with(&format!("Cannot unset table property '{CODEC}'")),
        "{e}"
    );
    assert!(unset_properties(&gzip_0, &[LEVEL.into()], false).is_ok());
    assert!(unset_properties(&gzip_0, &[CODEC.into(), LEVEL.into()], false).is_ok());
    // A pair already refused (another engine set it) can always be cleaned up.
    let lz4 = table(
        json!({"write.parquet.compression-codec": "lz4", "write.parquet.compression-level": "0"}),
    );
    assert!(unset_properties(&lz4, &[CODEC.into()], false).is_ok());
}

fn interesting_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?[0-9]{1,21}",
        " ?[0-9]{1,4} ?",
        "(zstd|ZSTD|gzip|snappy|lz4|brotli|uncompressed|none|true|false|TRUE)",
        "(none|counts|full|truncate\\([0-9]{0,3}\\)|Truncate\\(-1\\))",
        "[a-z0-9 .()-]{0,8}",
    ]
}

fn read_property() -> impl Strategy<Value = &'static str> {
    prop::sample::select(
        [
            "history.expire.min-snapshots-to-keep",
            "history.expire.max-snapshot-age-ms",
            "history.expire.max-ref-age-ms",
            "write.metadata.previous-versions-max",
            "commit.manifest.target-size-bytes",
            "write.target-file-size-bytes",
            CODEC,
            LEVEL,
            "write.parquet.row-group-size-bytes",
            "write.parquet.page-size-bytes",
            "write.parquet.page-row-limit",
            "write.parquet.dict-size-bytes",
            "write.metadata.metrics.default",
            "write.metadata.metrics.column.s",
        ]
        .to_vec(),
    )
}

proptest! {
    /// Whatever `SET TBLPROPERTIES` accepts, one property after another, every reader of the
    /// table's properties accepts afterwards.
    #[test]
    fn what_set_accepts_every_reader_reads(
        steps in prop::collection::vec((read_property(), interesting_value()), 1..6)
    ) {
        let mut md = table(json!({}));
        for (key, value) in steps {
            if let Ok(after) = set(&md, key, &value) {
                md = after;
                prop_assert!(read_all(&md).is_ok(), "{key} = {value:?}: {:?}", read_all(&md));
            }
        }
    }
}
