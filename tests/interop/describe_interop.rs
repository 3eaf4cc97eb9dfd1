//! `DESCRIBE TABLE` against ClickHouse's own `DESCRIBE` of the same Iceberg tables (chdb's
//! `icebergLocal`): a pyiceberg table of every Iceberg type, a ClickHouse v3 table of many types,
//! and a table with a nested struct. Same names, same ClickHouse types (nullability, decimals,
//! time zones, pretty-printed tuples), same seven columns.

use crate::compaction::{engine_sql, fixture};

fn clickhouse_rows(dir: &std::path::Path) -> Vec<Vec<String>> {
    let out = fixture(&["describe", dir.to_str().unwrap()]);
    out["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {out}"))
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

async fn icetrim_rows(dir: &std::path::Path) -> Vec<Vec<String>> {
    let results = engine_sql(dir, &["DESCRIBE TABLE t"]).await;
    results[0]
        .rows
        .iter()
        .map(|row| row.iter().map(|v| v.plain()).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn describe_table_matches_clickhouse() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 3] = [
        ("every_type", &["pyiceberg", "", "0"]),
        ("clickhouse_types", &["clickhouse_types", ""]),
        ("nested", &["nested", ""]),
    ];
    for (name, args) in cases {
        let dir = tmp.path().join(name);
        let mut args: Vec<&str> = args.to_vec();
        args[1] = dir.to_str().unwrap();
        fixture(&args);
        let expected = clickhouse_rows(&dir);
        assert!(
            !expected.is_empty(),
            "{name}: ClickHouse described no column"
        );
        assert_eq!(icetrim_rows(&dir).await, expected, "{name}");
    }
}
