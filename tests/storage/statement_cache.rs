//! The statement read cache on an object store (the S3 emulator): an expiry whose first commit
//! meets another writer's commit (the `before_commit` seam; the path table's next version is
//! taken) re-plans on the new metadata, and with the default settings the re-plan reads no
//! manifest list or manifest again; with `iceberg_statement_cache_max_bytes = 0` it reads them
//! all again. Requests are counted by the counting layer, on two identical generated tables.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use icetrim::Settings;
use icetrim::internals::engine::run_procedure_on;
use icetrim::internals::generate::{GenerateOptions, Mix, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::iceberg::txn::refs::set_properties;
use icetrim::internals::io::{FileIO, RequestCounter, RequestCounts};
use icetrim::internals::maintain::target::{BeforeCommit, MaintenanceTarget, TableSource};
use icetrim::internals::plan::{ExpireOptions, ProcedureCall};

use crate::support::{emulator_var, s3_emulator_options, unique};

const SNAPSHOTS: usize = 30;

fn target(io: FileIO, location: &str, settings: Settings, now_ms: i64) -> MaintenanceTarget {
    MaintenanceTarget {
        source: TableSource::Path,
        io,
        location: location.to_string(),
        metadata_settings: Default::default(),
        table_name: "t".into(),
        settings,
        now_ms,
        progress: Default::default(),
        before_commit: None,
    }
}

/// Another writer's commit (a table property), once, right before our first commit attempt.
fn other_writer_once(other: MaintenanceTarget) -> BeforeCommit {
    let fired = Arc::new(AtomicBool::new(false));
    BeforeCommit(Arc::new(move || {
        let (other, fired) = (other.clone(), Arc::clone(&fired));
        Box::pin(async move {
            if fired.swap(true, Ordering::SeqCst) {
                return;
            }
            let runtime = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                runtime.block_on(async {
                    other
                        .commit_edit("other writer", |m| {
                            set_properties(m, &[("other.writer", "1")]).map(Some)
                        })
                        .await
                        .expect("the other writer commits")
                })
            })
            .await
            .expect("the other writer's thread");
        })
    }))
}

/// Generate a fresh table on the emulator and expire all but its last two snapshots with another
/// writer's commit injected before our first commit: the requests of the expiry, its rows, and
/// the metadata's property (the other writer's commit survived).
async fn expire_with_a_racing_commit(
    settings: Settings,
) -> (RequestCounts, Vec<String>, Option<String>) {
    let io = FileIO::new(s3_emulator_options());
    let bucket = emulator_var("ICETRIM_S3_BUCKET");
    let location = format!("s3://{bucket}/{}", unique("statement-cache"));
    let now_ms = icetrim::Clock::now_ms(&icetrim::SystemClock);
    let mut opts = GenerateOptions::new(&location, FormatVersion::V2, SNAPSHOTS, 3, 7, now_ms);
    opts.mix = Mix::default();
    opts.write_data_files = false;
    generate(&io, &opts)
        .await
        .expect("generate on the emulator");

    let counter = RequestCounter::new();
    let counted = io.with_request_counter(Arc::clone(&counter));
    let mut ours = target(counted, &location, settings, now_ms);
    let other = target(io.clone(), &location, Settings::new(), now_ms);
    ours.before_commit = Some(other_writer_once(other.clone()));
    let options = ExpireOptions {
        retention_period_ms: Some(0),
        retain_last: Some(2),
        ..ExpireOptions::default()
    };
    let result = run_procedure_on(
        ours,
        ProcedureCall::Expire(options),
        false,
        &Default::default(),
    )
    .await
    .expect("the expiry re-plans and commits");
    let requests = counter.snapshot();
    let rows = result
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    let after = other
        .locate_newest("check")
        .await
        .expect("the table reads after both commits");
    let property = after.metadata.property("other.writer").map(str::to_string);
    (requests, rows, property)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replan_on_s3_reads_no_list_or_manifest_again_by_default() {
    let (cached, rows, property) = expire_with_a_racing_commit(Settings::new()).await;
    assert_eq!(
        property.as_deref(),
        Some("1"),
        "the other writer's commit stays"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("deleted_manifest_lists_count\t") && !r.ends_with("\t0")),
        "{rows:?}"
    );
    let mut off = Settings::new();
    off.set(
        "iceberg_statement_cache_max_bytes",
        &icetrim::internals::sql::Literal::Number("0".into()),
    )
    .expect("a setting");
    let (uncached, rows_off, property_off) = expire_with_a_racing_commit(off).await;
    assert_eq!(property_off.as_deref(), Some("1"));
    assert_eq!(rows, rows_off, "the cache changes no result");
    // Both re-plan once on the same table shape: without the cache the second plan reads every
    // manifest list (one per snapshot) and their manifests again; with it, none of them.
    eprintln!("with the statement cache: {cached}; without: {uncached}");
    let saved = uncached.get.saturating_sub(cached.get);
    assert!(
        saved >= SNAPSHOTS as u64,
        "the cache saves at least a GET per manifest list: {cached} against {uncached}"
    );
    assert_eq!(cached.head, uncached.head, "{cached} against {uncached}");
    assert_eq!(cached.list, uncached.list, "{cached} against {uncached}");
    assert_eq!(cached.put, uncached.put, "{cached} against {uncached}");
}
