//! The compaction executor: read the starting snapshot, plan (pure), rewrite the groups, then
//! commit them (`commit.rs`: a `replace` snapshot through `MaintenanceTarget::commit`, re-judged
//! against the start on every attempt after the first).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use apache_avro::types::Value;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::Value as Json;

use super::commit::{Rewritten, commit_loop, delete_uncommitted, removable_deletes};
use super::explain::explain_rows;
use super::filter::PartitionFilter;
use super::group::{GroupJob, rewrite_group, with_leftovers};
use super::memory::MemoryPlan;
use super::metrics::CompactMetrics;
use super::model::LiveFile;
use super::path::{PathField, partition_path};
use super::plan::{Group, Output, Place, Resolved, candidates, plan};
use super::read::{find_disputed, read_state};
use super::repartition::OutputSpec;
use super::rewrite::{GroupWriter, SortKey};
use super::stats::leaf_infos;
use super::writer::{WriteConfig, writer_properties};
use super::{CompactOutcome, PROCEDURE};
use crate::error::{Error, Result};
use crate::iceberg::arrow::schema::{arrow_schema, field_by_id};
use crate::iceberg::arrow::transform::Transform;
use crate::iceberg::avro::partition::partition_fields;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::FormatVersion;
use crate::iceberg::txn::names::current_schema_json;
use crate::maintain::target::MaintenanceTarget;
use crate::plan::CompactOptions;

/// Runs `rewrite_data_files` / `OPTIMIZE TABLE` on `target`; with `explain`, the plan only.
pub async fn execute(
    target: &MaintenanceTarget,
    options: &CompactOptions,
    explain: bool,
) -> Result<CompactOutcome> {
    options.validate()?;
    let located = target.locate_newest(PROCEDURE).await?;
    let md = &located.metadata;
    let mut warnings = located.warnings.clone();
    let dry_run = options.dry_run;
    let Some(snapshot) = md.current_snapshot().cloned() else {
        return Ok(CompactOutcome {
            metrics: CompactMetrics {
                dry_run,
                ..Default::default()
            },
            explain: explain.then(Vec::new),
            warnings,
        });
    };
    let resolved = Resolved::new(options, md.property("write.target-file-size-bytes"))?;
    let schema_json: Json = serde_json::from_str(&current_schema_json(md)?)
        .map_err(|e| Error::incorrect_data(format!("{}: current schema: {e}", md.file())))?;
    let row_lineage = md.format_version() >= FormatVersion::V3;
    // Types we cannot rewrite refuse the table before anything is read or written.
    let schema = arrow_schema(&schema_json, row_lineage).map_err(|e| in_table(e, target))?;
    let filter = options
        .filter
        .as_ref()
        .map(|p| PartitionFilter::new(p, &schema_json, md.partition_specs()))
        .transpose()?;
    let concurrency = target.settings.metadata_read_concurrency();
    let (sort, unsorted) = sort_keys(md, &schema);
    let state = read_state(&target.io, md, &snapshot, concurrency).await?;
    let default_spec = default_spec(md);
    // Memory: the budget's split between groups and inside one (`memory.rs`); the planner splits
    // groups whose delete files would not fit. Rows are buffered (the sort buffer) when the table
    // has a sort order, or when rows of older specs may be split by the default spec.
    let may_split = !default_spec.1 && state.data.iter().any(|f| f.spec_id != default_spec.0);
    let memory = MemoryPlan::new(
        target.settings.compaction_max_memory_bytes(),
        resolved.max_concurrent,
        !sort.is_empty() || may_split,
    )?;
    let resolved = Resolved {
        delete_memory: memory.deletes,
        ..resolved
    };
    // Rows of older specs are re-partitioned by the default spec, when icetrim can compute it.
    let output_spec: Option<std::result::Result<Arc<OutputSpec>, String>> =
        (!default_spec.1).then(|| {
            output_spec(md, default_spec.0, &schema_json, &schema)
                .map(Arc::new)
                .map_err(|e| e.message().to_string())
        });
    // Data files that a position delete file out of their scope names are left as they are.
    let selected_by_filter = |f: &LiveFile| filter.as_ref().is_none_or(|p| p.may_match(f));
    let disputed = find_disputed(
        &target.io,
        &state,
        &candidates(&state.data, &state.deletes, &resolved, selected_by_filter),
        memory.whole_file,
        usize::try_from(memory.in_flight).unwrap_or(1),
    )
    .await?;
    warnings.extend(super::disputed::warning(&target.table_name, &disputed));
    let place = |f: &LiveFile| -> Place {
        if disputed.contains_key(f.path()) {
            return Place::Blocked(super::disputed::REASON.to_string());
        }
        if f.spec_id == default_spec.0 {
            return Place::Partition(f.file.partition.clone());
        }
        match &output_spec {
            None => Place::Partition(Value::Record(Vec::new())),
            Some(Err(why)) => Place::Blocked(format!(
                "spec {} is not the default spec {}, whose partitions icetrim cannot compute: \
                 {why}",
                f.spec_id, default_spec.0
            )),
            Some(Ok(out)) => md
                .partition_spec(f.spec_id)
                .and_then(|old| out.derive(old, &f.file.partition))
                .map_or(Place::Split, Place::Partition),
        }
    };
    let plan = plan(
        &state.data,
        &state.deletes,
        &resolved,
        selected_by_filter,
        default_spec.0,
        place,
    );
    let split_spec = output_spec.and_then(|o| o.ok());
    if split_spec.is_none() && plan.rewritten().any(|g| matches!(g.output, Output::Split)) {
        return Err(Error::logical(format!(
            "{PROCEDURE} on {}: a file group splits rows by a partition spec that could not be \
             computed",
            target.table_name
        )));
    }
    if explain {
        return Ok(CompactOutcome {
            metrics: CompactMetrics::default(),
            explain: Some(explain_rows(&plan, &state.deletes)),
            warnings,
        });
    }
    for g in plan.groups.iter().filter(|g| g.over_memory) {
        warnings.push(format!(
            "{}: a data file in partition '{}' is not rewritten: {}",
            target.table_name, g.partition, g.reason
        ));
    }
    let groups: Vec<(usize, &Group)> = plan.rewritten().map(|g| (g.index, g)).collect();
    if dry_run || groups.is_empty() {
        let rewritten: Vec<&LiveFile> = groups
            .iter()
            .flat_map(|(_, g)| g.inputs.iter().map(|i| &state.data[*i]))
            .collect();
        let removed = removable_deletes(&state, &rewritten, &HashMap::new());
        return Ok(CompactOutcome {
            metrics: CompactMetrics {
                rewritten_data_files_count: rewritten.len() as i64,
                added_data_files_count: groups.iter().map(|(_, g)| g.expected_outputs as i64).sum(),
                rewritten_bytes_count: groups.iter().map(|(_, g)| g.input_bytes as i64).sum(),
                added_bytes_count: 0,
                removed_delete_files_count: removed.len() as i64,
                rewritten_file_groups_count: groups.len() as i64,
                failed_data_files_count: 0,
                dry_run,
            },
            explain: None,
            warnings,
        });
    }
    located.check_writable()?;
    let (properties, row_group_bytes) = writer_properties(md.properties())?;
    let config = WriteConfig {
        schema,
        leaves: Arc::new(leaf_infos(&schema_json, md.properties())?),
        properties,
        // Row groups are flushed at the table's size or the group's share, whichever is less.
        row_group_bytes: row_group_bytes
            .min(usize::try_from(memory.output_row_group).unwrap_or(usize::MAX)),
        roll_bytes: resolved.write_max_file_size(),
        data_dir: format!("{}/data", md.location().trim_end_matches('/')),
        // The order the rows follow: none when the table's order cannot be applied.
        sort_order_id: default_sort_order(md)
            .map(|(id, _)| id)
            .filter(|_| unsorted.is_none()),
        io: target.io.clone(),
    };
    if let Some(why) = unsorted {
        warnings.push(format!(
            "{}: the table's sort order is not applied ({why}); rows keep their input order",
            target.table_name
        ));
    }
    let path_fields = output_path_fields(md, default_spec.0, &schema_json)?;
    let dir_of = |partition: &Value| -> String {
        let folder = partition_path(&path_fields, partition);
        if folder.is_empty() {
            config.data_dir.clone()
        } else {
            format!("{}/{folder}", config.data_dir)
        }
    };
    let partition_of = |g: &Group| -> Value {
        match &g.output {
            Output::Partition(v) => v.clone(),
            Output::Split => Value::Record(Vec::new()),
        }
    };
    let stop = AtomicBool::new(false);
    // Over indices, and boxed: a closure taking a reference, or a combinator held across an
    // await, makes the statement's future one the compiler cannot prove `Send` for every
    // lifetime (a host's `tokio::spawn` refuses it).
    let rewrites: BoxStream<'_, Result<Option<Rewritten>>> = futures::stream::iter(0..groups.len())
        .map(|k: usize| {
            let (i, g) = groups[k];
            let inputs: Vec<LiveFile> = g.inputs.iter().map(|j| state.data[*j].clone()).collect();
            let deletes: Vec<LiveFile> = g
                .deletes
                .iter()
                .map(|j| state.deletes[*j].clone())
                .collect();
            let partition = partition_of(g);
            let dir = dir_of(&partition);
            let index = i;
            let split = match g.output {
                Output::Split => split_spec.clone(),
                Output::Partition(_) => None,
            };
            let job = GroupJob {
                writer: GroupWriter::new(
                    config.clone(),
                    dir,
                    partition,
                    sort.clone(),
                    split,
                    memory,
                ),
                config: config.clone(),
                inputs,
                deletes,
                row_lineage,
                memory,
            };
            let stop = &stop;
            async move {
                let done = rewrite_group(target, job, stop).await?;
                Ok(done.map(|(outputs, mentions)| Rewritten {
                    group: index,
                    outputs,
                    mentions,
                }))
            }
            .boxed()
        })
        .buffer_unordered(usize::try_from(memory.in_flight).unwrap_or(1))
        .boxed();
    let results: Vec<Result<Option<Rewritten>>> = rewrites.collect().await;
    let rewritten = all_rewritten(target, results).await?;
    commit_loop(
        target,
        &located,
        &snapshot,
        &state,
        &plan.groups,
        rewritten,
        warnings,
    )
    .await
}

fn in_table(e: Error, target: &MaintenanceTarget) -> Error {
    let kind = e.kind();
    Error::new(
        kind,
        format!("{PROCEDURE} on {}: {}", target.table_name, e.message()),
    )
}

/// The fields of the default spec as output folders name them (name, transform, result type).
fn output_path_fields(
    md: &TableMetadata,
    spec_id: i32,
    schema_json: &Json,
) -> Result<Vec<PathField>> {
    let Some(spec) = md.partition_spec(spec_id) else {
        return Ok(Vec::new());
    };
    let spec_json = serde_json::json!({
        "spec-id": spec_id,
        "fields": spec.fields.iter().map(|f| serde_json::json!({
            "name": f.name,
            "transform": f.transform,
            "source-id": f.source_id,
            "field-id": f.field_id,
        })).collect::<Vec<_>>(),
    });
    let typed = partition_fields(&spec_json.to_string(), &schema_json.to_string())?;
    Ok(spec
        .fields
        .iter()
        .zip(typed)
        .map(|(f, t)| PathField {
            name: f.name.clone(),
            transform: f.transform.clone(),
            result_type: t.result_type,
        })
        .collect())
}

/// The default spec, ready to place rows (its transforms parsed, its sources found).
fn output_spec(
    md: &TableMetadata,
    spec_id: i32,
    schema_json: &Json,
    schema: &arrow_schema::SchemaRef,
) -> Result<OutputSpec> {
    let spec = md.partition_spec(spec_id).ok_or_else(|| {
        Error::incorrect_data(format!("{}: no partition spec {spec_id}", md.file()))
    })?;
    let types: Vec<String> = output_path_fields(md, spec_id, schema_json)?
        .into_iter()
        .map(|f| f.result_type)
        .collect();
    OutputSpec::new(spec, &types, schema)
}

/// The default spec id and whether it is unpartitioned.
fn default_spec(md: &TableMetadata) -> (i32, bool) {
    let id = md.default_spec_id();
    (
        id,
        md.partition_spec(id).is_none_or(|s| s.fields.is_empty()),
    )
}

/// The default sort order as keys; a reason when it cannot be applied (an unknown transform,
/// one that does not apply to its column's type, or a column inside a list or map).
fn sort_keys(
    md: &TableMetadata,
    schema: &arrow_schema::SchemaRef,
) -> (Vec<SortKey>, Option<String>) {
    let Some(id) = md
        .members()
        .get("default-sort-order-id")
        .and_then(Json::as_i64)
    else {
        return (Vec::new(), None);
    };
    let Some(order) = md
        .members()
        .get("sort-orders")
        .and_then(Json::as_array)
        .and_then(|o| {
            o.iter()
                .find(|o| o.get("order-id").and_then(Json::as_i64) == Some(id))
        })
    else {
        return (Vec::new(), None);
    };
    let fields = order
        .get("fields")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let mut keys = Vec::new();
    for f in &fields {
        let text = f
            .get("transform")
            .and_then(Json::as_str)
            .unwrap_or("identity");
        let transform = match Transform::parse(text) {
            Ok(t) => t,
            Err(e) => return (Vec::new(), Some(e.message().to_string())),
        };
        let source = f
            .get("source-id")
            .and_then(Json::as_i64)
            .and_then(|v| i32::try_from(v).ok())
            .unwrap_or(-1);
        let Some(column) = field_by_id(schema.fields(), source) else {
            return (
                Vec::new(),
                Some(format!(
                    "sort column {source} is not a column or struct field"
                )),
            );
        };
        let empty = arrow_array::new_empty_array(column.data_type());
        if let Err(e) = transform.apply(&empty) {
            return (Vec::new(), Some(e.message().to_string()));
        }
        keys.push(SortKey {
            source_id: source,
            transform,
            descending: f.get("direction").and_then(Json::as_str) == Some("desc"),
            nulls_first: f.get("null-order").and_then(Json::as_str) != Some("nulls-last"),
        });
    }
    (keys, None)
}

/// The default sort order id and its number of fields.
fn default_sort_order(md: &TableMetadata) -> Option<(i32, usize)> {
    let id = md.members().get("default-sort-order-id")?.as_i64()?;
    let fields = md
        .members()
        .get("sort-orders")?
        .as_array()?
        .iter()
        .find(|o| o.get("order-id").and_then(Json::as_i64) == Some(id))
        .and_then(|o| o.get("fields")?.as_array().map(Vec::len))
        .unwrap_or(0);
    Some((i32::try_from(id).ok()?, fields))
}

/// The groups rewritten, when all were; otherwise the first failure, after deleting what the
/// groups that did finish wrote (never committed).
async fn all_rewritten(
    target: &MaintenanceTarget,
    results: Vec<Result<Option<Rewritten>>>,
) -> Result<Vec<Rewritten>> {
    let mut done = Vec::new();
    let mut failure = None;
    for result in results {
        match result {
            Ok(Some(r)) => done.push(r),
            Ok(None) => {}
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    let Some(error) = failure else {
        return Ok(done);
    };
    let written: Vec<String> = done
        .into_iter()
        .flat_map(|r| r.outputs.into_iter().map(|f| f.file_path))
        .collect();
    let kept = delete_uncommitted(target, &written).await;
    Err(with_leftovers(error, &kept))
}
