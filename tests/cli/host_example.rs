//! The DataFusion host example (`examples/datafusion_host.rs`): one script mixes the host's SQL
//! over its Parquet data with icetrim's statements, and a join between a metadata table and the
//! host's data answers per team.

#[path = "../../examples/datafusion_host.rs"]
#[allow(dead_code)]
mod datafusion_host;

use icetrim::datafusion::arrow::array::{Array, AsArray, RecordBatch};
use icetrim::datafusion::arrow::datatypes::Int64Type;
use icetrim::datafusion::prelude::SessionContext;
use icetrim::engine::Engine;
use icetrim::{StorageOptions, Table};

fn strings(batches: &[RecordBatch], column: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let c = b.column_by_name(column).expect("column");
        let c = icetrim::datafusion::arrow::compute::cast(
            c,
            &icetrim::datafusion::arrow::datatypes::DataType::Utf8,
        )
        .expect("as text");
        let c = c.as_string::<i32>();
        out.extend((0..c.len()).map(|i| c.value(i).to_string()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_script_and_a_join_with_the_hosts_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let answers = datafusion_host::run(dir.path())
        .await
        .expect("the host runs");
    assert_eq!(answers.len(), 4);
    // icetrim registered the table: no rows.
    assert!(answers[0].batches.iter().all(|b| b.num_rows() == 0));
    // The host's own SQL over its Parquet data.
    assert_eq!(strings(&answers[1].batches, "team"), ["analytics", "sales"]);
    assert_eq!(strings(&answers[1].batches, "tables"), ["2", "1"]);
    // icetrim's procedure: ClickHouse's metric rows, typed.
    let metrics = &answers[2].batches;
    let names = strings(metrics, "metric_name");
    assert_eq!(
        names.first().map(String::as_str),
        Some("deleted_data_files_count")
    );
    assert_eq!(names.last().map(String::as_str), Some("dry_run"));
    let values = metrics[0].column_by_name("metric_value").expect("values");
    assert_eq!(
        values.as_primitive::<Int64Type>().value(values.len() - 1),
        1
    );
    // The join: the demo table's snapshots, under its owner team.
    let location = dir.path().join("events").to_string_lossy().into_owned();
    let table = Table::open(&location, StorageOptions::default()).expect("opens");
    let snapshots: usize = table
        .metadata_table(icetrim::MetadataTable::Snapshots)
        .collect()
        .await
        .expect("snapshots")
        .iter()
        .map(RecordBatch::num_rows)
        .sum();
    assert!(snapshots >= 15, "{snapshots}");
    assert_eq!(strings(&answers[3].batches, "team"), ["analytics"]);
    assert_eq!(
        strings(&answers[3].batches, "snapshots"),
        [snapshots.to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_go_to_icetrim_or_to_the_host() {
    let ctx = SessionContext::new();
    let missing = icetrim::host::sql(&ctx, "SELECT 1").await.unwrap_err();
    assert!(
        missing.to_string().contains("icetrim::host::install"),
        "{missing}"
    );
    let engine = Engine::builder().build().expect("engine");
    icetrim::host::install(&ctx, &engine).expect("installs");
    // A file-level metadata table read without a table predicate is refused, as in SQL.
    let unfiltered = icetrim::host::sql(&ctx, "SELECT count(*) FROM icetrim.system.iceberg_files")
        .await
        .expect("planned lazily");
    let refused = unfiltered[0].clone().collect().await.unwrap_err();
    let refused = icetrim::host::error(refused).to_string();
    assert!(refused.contains("QUERY_IS_PROHIBITED"), "{refused}");
    // An icetrim setting goes to icetrim (DataFusion would refuse the name); DataFusion's own
    // settings, DDL and queries go to DataFusion.
    let frames = icetrim::host::sql(
        &ctx,
        "SET iceberg_metadata_tables_allow_full_scan = 1;
         SET datafusion.execution.batch_size = 1024;
         CREATE TABLE host_t AS VALUES (1), (2);
         SELECT count(*) AS n FROM host_t;
         SELECT count(*) AS files FROM icetrim.system.iceberg_files",
    )
    .await
    .expect("the script runs");
    assert_eq!(frames.len(), 5);
    let n = frames[3].clone().collect().await.expect("host query");
    assert_eq!(strings(&n, "n"), ["2"]);
    // The full-scan setting reached the metadata tables: no table, no rows, no refusal.
    let files = frames[4].clone().collect().await.expect("metadata query");
    assert_eq!(strings(&files, "files"), ["0"]);
    // icetrim's errors keep their ClickHouse form; a host error is mapped too.
    let bad = icetrim::host::sql(&ctx, "ALTER TABLE nope EXECUTE expire_snapshots()")
        .await
        .unwrap_err();
    assert!(
        bad.to_string().starts_with("Code: 60. DB::Exception:"),
        "{bad}"
    );
    let host_bad = icetrim::host::sql(&ctx, "SELEC 1").await.unwrap_err();
    assert!(host_bad.to_string().starts_with("Code: "), "{host_bad}");
}
