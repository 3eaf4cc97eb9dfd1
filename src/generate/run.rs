//! The generator's driver: plan the history, play it through [`History`], then write statistics
//! files, orphans and the one metadata file (`metadata/v1.metadata.json`, refused when the location
//! already has it).

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};

use super::history::{History, Layout};
use super::model::{Head, Paths};
use super::schedule::{Event, Schedule, plan};
use super::sink::Sink;
use super::{ExpectedFiles, GenerateOptions, Generated, MainOp, RefFacts, local_path, validate};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{DataContent, FormatVersion, MAIN_BRANCH, RefKind, SnapshotId};
use crate::iceberg::txn::create::new_table_json;
use crate::io::{FileIO, WriteOutcome};

const DAY_MS: i64 = 86_400_000;

/// Generate the table `opts` describes at `opts.location`; see the module comment.
pub async fn generate(io: &FileIO, opts: &GenerateOptions) -> Result<Generated> {
    validate(opts)?;
    let paths = Paths::new(&opts.location);
    let metadata_path = paths.metadata("v1.metadata.json");
    match io.head(&metadata_path).await {
        Ok(_) => {
            return Err(Error::bad_arguments(format!(
                "'{metadata_path}' exists: generate into an empty location"
            )));
        }
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => {}
        Err(e) => return Err(e),
    }
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let schedule = plan(opts, &mut rng);
    let sink = Sink::new(
        io,
        opts.format_version,
        opts.codec,
        super::table_schema(opts.partitions > 0, opts.wide_columns).to_string(),
        super::partition_spec(opts.partitions > 0).to_string(),
        paths,
    );
    let layout = Layout {
        files_per_snapshot: opts.files_per_snapshot,
        max_manifests: opts.max_manifests,
        target_entries: opts.target_manifest_entries,
        fan_in: opts.merge_fan_in,
    };
    let mut history = History::new(rng, sink, layout);
    history.write_data = opts.write_data_files;
    history.partitions = opts.partitions;
    history.rows_per_file = opts.rows_per_file;
    history.row_bytes = opts.row_bytes;
    history.wide_columns = opts.wide_columns;
    if opts.parquet_data {
        history.parquet = Some(Default::default());
    }
    let table_uuid = history.uuid();
    let played = play(&mut history, opts, &schedule).await?;
    let extras = write_extras(&mut history, opts, &played).await?;
    history.sink.flush().await?;
    let json = table_json(opts, &table_uuid, &history, &played, &schedule, &extras);
    let metadata = TableMetadata::from_json(json, &metadata_path)?;
    let bytes = Bytes::from(metadata.to_json_bytes());
    if io.write_if_absent(&metadata_path, bytes).await? == WriteOutcome::AlreadyExists {
        return Err(Error::bad_arguments(format!(
            "'{metadata_path}' appeared while generating"
        )));
    }
    set_old_mtimes(&extras.orphans, opts.now_ms - opts.span_ms - DAY_MS)?;
    Ok(facts(
        opts,
        metadata_path,
        table_uuid,
        history,
        played,
        extras,
        &schedule,
    ))
}

/// The heads the history ends with.
struct Played {
    main: Head,
    branches: Vec<Option<Head>>,
    tags: Vec<(SnapshotId, Head)>,
    staged: Vec<SnapshotId>,
    snapshot_log: Vec<(SnapshotId, i64)>,
    statistics_targets: Vec<SnapshotId>,
    last_ms: i64,
}

async fn play(
    history: &mut History,
    opts: &GenerateOptions,
    schedule: &Schedule,
) -> Result<Played> {
    let n = schedule.events.len() as i64;
    let mut p = Played {
        main: Head::default(),
        branches: vec![None; opts.branches],
        tags: Vec::new(),
        staged: Vec::new(),
        snapshot_log: Vec::new(),
        statistics_targets: Vec::new(),
        last_ms: opts.now_ms - opts.span_ms,
    };
    let mut tags = schedule.tags.iter().peekable();
    for (i, event) in schedule.events.iter().enumerate() {
        let ts = opts.now_ms - opts.span_ms + opts.span_ms * i as i64 / n;
        p.last_ms = ts;
        match *event {
            Event::Main(op) => {
                p.main = history.commit(&p.main, op, ts).await?;
                let id = p.main.snapshot_id.unwrap_or_default();
                p.snapshot_log.push((id, ts));
                if tags.peek().is_some_and(|(at, _)| *at == i) {
                    tags.next();
                    p.tags.push((id, p.main.clone()));
                }
                if schedule.statistics.contains(&i) {
                    p.statistics_targets.push(id);
                }
            }
            Event::Branch(b) => {
                let parent = p.branches[b].take().unwrap_or_else(|| p.main.clone());
                p.branches[b] = Some(history.commit(&parent, MainOp::Append, ts).await?);
            }
            Event::Staged => {
                let staged = history.commit(&p.main, MainOp::Append, ts).await?;
                p.staged.extend(staged.snapshot_id);
            }
        }
    }
    Ok(p)
}

/// Statistics files and orphans.
struct Extras {
    statistics: Vec<Value>,
    partition_statistics: Vec<Value>,
    orphans: Vec<String>,
}

async fn write_extras(
    history: &mut History,
    opts: &GenerateOptions,
    played: &Played,
) -> Result<Extras> {
    let mut extras = Extras {
        statistics: Vec::new(),
        partition_statistics: Vec::new(),
        orphans: Vec::new(),
    };
    for (k, &id) in played.statistics_targets.iter().enumerate() {
        let u = history.uuid();
        let path = history.sink.paths.metadata(&format!("{id}-{u}.stats"));
        let bytes: &[u8] = b"PFA1PFA1";
        history
            .sink
            .write(path.clone(), Bytes::from_static(bytes))
            .await?;
        extras.statistics.push(json!({
            "snapshot-id": id,
            "statistics-path": path,
            "file-size-in-bytes": bytes.len(),
            "file-footer-size-in-bytes": 4,
            "blob-metadata": [],
        }));
        if k % 2 == 0 {
            let path = history
                .sink
                .paths
                .metadata(&format!("partition-stats-{id}-{u}.parquet"));
            history
                .sink
                .write(path.clone(), Bytes::from_static(b"PAR1PAR1"))
                .await?;
            extras.partition_statistics.push(json!({
                "snapshot-id": id,
                "statistics-path": path,
                "file-size-in-bytes": 8,
            }));
        }
    }
    for k in 0..opts.orphans {
        let u = history.uuid();
        let path = if k % 3 == 2 {
            history.sink.paths.metadata(&format!("{u}-m0.avro"))
        } else {
            history.sink.paths.of(u.as_u128(), DataContent::Data, None)
        };
        history
            .sink
            .write(path.clone(), Bytes::from_static(b"orphan"))
            .await?;
        extras.orphans.push(path);
    }
    Ok(extras)
}

/// On local disk, date the files `ms` (object stores cannot be told an mtime).
fn set_old_mtimes(files: &[String], ms: i64) -> Result<()> {
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    for f in files {
        if let Some(path) = local_path(f) {
            let file = std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|file| file.set_modified(when));
            file.map_err(|e| {
                Error::new(ErrorKind::StorageError, format!("Cannot date '{f}': {e}"))
            })?;
        }
    }
    Ok(())
}

fn ref_json(
    kind: RefKind,
    id: SnapshotId,
    min_keep: Option<i32>,
    max_age: Option<i64>,
    max_ref_age: Option<i64>,
) -> Value {
    let mut r = Map::new();
    r.insert("snapshot-id".into(), id.into());
    r.insert("type".into(), kind.as_str().into());
    if let Some(v) = min_keep {
        r.insert("min-snapshots-to-keep".into(), v.into());
    }
    if let Some(v) = max_age {
        r.insert("max-snapshot-age-ms".into(), v.into());
    }
    if let Some(v) = max_ref_age {
        r.insert("max-ref-age-ms".into(), v.into());
    }
    Value::Object(r)
}

fn branch_name(b: usize) -> String {
    format!("branch_{b}")
}

fn tag_name(t: usize) -> String {
    format!("tag_{t}")
}

fn table_json(
    opts: &GenerateOptions,
    table_uuid: &uuid::Uuid,
    history: &History,
    played: &Played,
    schedule: &Schedule,
    extras: &Extras,
) -> Map<String, Value> {
    let mut m = new_table_json(
        &opts.location,
        opts.format_version,
        table_uuid,
        played.last_ms,
    );
    if opts.format_version >= FormatVersion::V2 {
        m.insert("last-sequence-number".into(), history.seq.into());
    }
    let partitioned = opts.partitions > 0;
    if partitioned || opts.wide_columns {
        // The schema the manifests were written with (one schema-id 0 everywhere).
        let schema = super::table_schema(partitioned, opts.wide_columns);
        let last_column_id = if opts.wide_columns { 6 } else { 3 };
        if opts.format_version == FormatVersion::V1 {
            m.insert("schema".into(), schema.clone());
        }
        m.insert("schemas".into(), json!([schema]));
        m.insert("last-column-id".into(), last_column_id.into());
    }
    if partitioned {
        let spec = super::partition_spec(true);
        if opts.format_version == FormatVersion::V1 {
            m.insert("partition-spec".into(), spec["fields"].clone());
        }
        m.insert("partition-specs".into(), json!([spec]));
        m.insert("last-partition-id".into(), 1000.into());
    }
    if opts.format_version >= FormatVersion::V3 {
        m.insert("next-row-id".into(), history.next_row_id.into());
    }
    let current = played.main.snapshot_id.unwrap_or(-1);
    m.insert("current-snapshot-id".into(), current.into());
    let mut refs = Map::new();
    refs.insert(
        MAIN_BRANCH.into(),
        ref_json(RefKind::Branch, current, None, None, None),
    );
    for (b, head) in played.branches.iter().enumerate() {
        if let (Some(id), Some(r)) = (
            head.as_ref().and_then(|h| h.snapshot_id),
            schedule.branch_retention.get(b),
        ) {
            refs.insert(
                branch_name(b),
                ref_json(
                    RefKind::Branch,
                    id,
                    r.min_snapshots_to_keep,
                    r.max_snapshot_age_ms,
                    r.max_ref_age_ms,
                ),
            );
        }
    }
    for (t, ((id, _), (_, max_ref_age))) in played.tags.iter().zip(&schedule.tags).enumerate() {
        refs.insert(
            tag_name(t),
            ref_json(RefKind::Tag, *id, None, None, *max_ref_age),
        );
    }
    m.insert("refs".into(), Value::Object(refs));
    m.insert("snapshots".into(), Value::Array(history.snapshots.clone()));
    let log = played
        .snapshot_log
        .iter()
        .map(|(id, ts)| json!({"snapshot-id": id, "timestamp-ms": ts}))
        .collect();
    m.insert("snapshot-log".into(), Value::Array(log));
    m.insert("statistics".into(), Value::Array(extras.statistics.clone()));
    m.insert(
        "partition-statistics".into(),
        Value::Array(extras.partition_statistics.clone()),
    );
    m
}

fn expected(head: &Head, history: &History) -> ExpectedFiles {
    let paths = &history.sink.paths;
    let live_data: HashSet<u128> = head
        .live_files()
        .filter(|f| f.content == DataContent::Data)
        .map(|f| f.id)
        .collect();
    let mut data: Vec<String> = head
        .live_files()
        .filter(|f| f.content == DataContent::Data)
        .map(|f| paths.file(f))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut deletes: Vec<String> = head
        .live_files()
        .filter(|f| f.referenced.is_some_and(|r| live_data.contains(&r)))
        .map(|f| paths.file(f))
        .collect();
    data.sort();
    deletes.sort();
    ExpectedFiles { data, deletes }
}

fn facts(
    opts: &GenerateOptions,
    metadata_path: String,
    table_uuid: uuid::Uuid,
    history: History,
    played: Played,
    extras: Extras,
    schedule: &Schedule,
) -> Generated {
    let retention = &schedule.branch_retention;
    let tag_ages = &schedule.tags;
    let live = |h: &Head| {
        h.live_files()
            .filter(|f| f.content == DataContent::Data)
            .count()
    };
    let mut refs = Vec::new();
    let mut heads: Vec<(String, &Head)> = Vec::new();
    if let Some(id) = played.main.snapshot_id {
        refs.push(RefFacts {
            name: MAIN_BRANCH.into(),
            kind: RefKind::Branch,
            snapshot_id: id,
            min_snapshots_to_keep: None,
            max_snapshot_age_ms: None,
            max_ref_age_ms: None,
            live_data_files: live(&played.main),
        });
        heads.push((MAIN_BRANCH.into(), &played.main));
    }
    for (b, head) in played.branches.iter().enumerate() {
        if let (Some(head), Some(id)) = (head, head.as_ref().and_then(|h| h.snapshot_id)) {
            let r = retention.get(b).copied().unwrap_or_default();
            refs.push(RefFacts {
                name: branch_name(b),
                kind: RefKind::Branch,
                snapshot_id: id,
                min_snapshots_to_keep: r.min_snapshots_to_keep,
                max_snapshot_age_ms: r.max_snapshot_age_ms,
                max_ref_age_ms: r.max_ref_age_ms,
                live_data_files: live(head),
            });
            heads.push((branch_name(b), head));
        }
    }
    for (t, ((id, head), (_, max_ref_age_ms))) in played.tags.iter().zip(tag_ages).enumerate() {
        refs.push(RefFacts {
            name: tag_name(t),
            kind: RefKind::Tag,
            snapshot_id: *id,
            min_snapshots_to_keep: None,
            max_snapshot_age_ms: None,
            max_ref_age_ms: *max_ref_age_ms,
            live_data_files: live(head),
        });
        heads.push((tag_name(t), head));
    }
    let expected: BTreeMap<String, ExpectedFiles> = if opts.collect_expected {
        heads
            .iter()
            .map(|(name, head)| (name.clone(), expected(head, &history)))
            .collect()
    } else {
        BTreeMap::new()
    };
    let path_of = |v: &Value| {
        v["statistics-path"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    Generated {
        location: opts.location.clone(),
        metadata_path,
        table_uuid: table_uuid.to_string(),
        format_version: opts.format_version,
        snapshots: history.snapshots.len(),
        current_snapshot_id: played.main.snapshot_id,
        refs,
        staged: played.staged.clone(),
        statistics_files: extras.statistics.iter().map(path_of).collect(),
        partition_statistics_files: extras.partition_statistics.iter().map(path_of).collect(),
        orphans: extras.orphans,
        data_files_added: history.data_files_added,
        written: history.sink.written,
        expected,
    }
}
