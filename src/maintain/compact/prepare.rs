//! Compaction's plan: read the table's current snapshot (its live data and delete files), resolve
//! the options against the table's properties and the memory budget, find the data files a
//! delete file disputes, and group the rest (`plan.rs`, pure). EXPLAIN prints this plan, a dry
//! run counts it, a run rewrites its groups (`execute.rs`).

use std::sync::Arc;

use serde_json::Value as Json;

use super::PROCEDURE;
use super::filter::PartitionFilter;
use super::memory::MemoryPlan;
use super::model::LiveFile;
use super::path::PathField;
use super::plan::{Output, Place, Plan, Resolved, candidates, plan};
use super::read::{TableState, find_disputed, read_state};
use super::repartition::OutputSpec;
use super::rewrite::SortKey;
use crate::error::{Error, Result};
use crate::iceberg::arrow::schema::{arrow_schema, field_by_id};
use crate::iceberg::arrow::transform::Transform;
use crate::iceberg::avro::partition::partition_fields;
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::PartitionTuple;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{FormatVersion, Snapshot};
use crate::iceberg::txn::names::current_schema_json;
use crate::maintain::target::MaintenanceTarget;
use crate::plan::CompactOptions;

/// What a compaction decided.
pub enum CompactPlan {
    /// The table has no current snapshot: nothing to do.
    NoSnapshot {
        dry_run: bool,
        warnings: Vec<String>,
    },
    /// The file groups of the current snapshot, with what rewriting them needs.
    Groups(Box<Planned>),
}

/// A plan over the current snapshot.
pub struct Planned {
    /// The metadata planned on (the first commit attempt's base).
    pub located: LocatedMetadata,
    pub snapshot: Snapshot,
    pub state: TableState,
    pub plan: Plan,
    pub resolved: Resolved,
    pub memory: MemoryPlan,
    /// The current schema, as Arrow and as its JSON.
    pub schema: arrow_schema::SchemaRef,
    pub schema_json: Json,
    /// The table's sort order as keys; why it cannot be applied, when it cannot.
    pub sort: Vec<SortKey>,
    pub unsorted: Option<String>,
    /// The default spec, ready to split rows of older specs (when some group splits).
    pub split_spec: Option<Arc<OutputSpec>>,
    pub default_spec: DefaultSpec,
    /// v3 and later: rows carry lineage.
    pub row_lineage: bool,
    pub dry_run: bool,
    pub warnings: Vec<String>,
    /// Groups left alone because a file would not fit the memory budget (warned by runs and dry
    /// runs; EXPLAIN shows them as rows).
    pub over_memory: Vec<String>,
}

/// Read the current snapshot and decide the groups: the plan. Nothing is written.
pub(super) async fn prepare(
    target: &MaintenanceTarget,
    options: &CompactOptions,
) -> Result<CompactPlan> {
    options.validate()?;
    let located = target.locate_newest(PROCEDURE).await?;
    let md = &located.metadata;
    let mut warnings = located.warnings.clone();
    let dry_run = options.dry_run;
    let Some(snapshot) = md.current_snapshot().cloned() else {
        return Ok(CompactPlan::NoSnapshot { dry_run, warnings });
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
    let may_split =
        !default_spec.unpartitioned && state.data.iter().any(|f| f.spec_id != default_spec.id);
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
        (!default_spec.unpartitioned).then(|| {
            output_spec(md, default_spec.id, &schema_json, &schema)
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
        if f.spec_id == default_spec.id {
            return Place::Partition(f.file.partition.clone());
        }
        match &output_spec {
            None => Place::Partition(PartitionTuple::default()),
            Some(Err(why)) => Place::Blocked(format!(
                "spec {} is not the default spec {}, whose partitions icetrim cannot compute: \
                 {why}",
                f.spec_id, default_spec.id
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
        default_spec.id,
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
    let over_memory = plan
        .groups
        .iter()
        .filter(|g| g.over_memory)
        .map(|g| {
            format!(
                "{}: a data file in partition '{}' is not rewritten: {}",
                target.table_name, g.partition, g.reason
            )
        })
        .collect();
    Ok(CompactPlan::Groups(Box::new(Planned {
        located,
        snapshot,
        state,
        plan,
        resolved,
        memory,
        schema,
        schema_json,
        sort,
        unsorted,
        split_spec,
        default_spec,
        row_lineage,
        dry_run,
        warnings,
        over_memory,
    })))
}

pub(super) fn in_table(e: Error, target: &MaintenanceTarget) -> Error {
    let kind = e.kind();
    Error::new(
        kind,
        format!("{PROCEDURE} on {}: {}", target.table_name, e.message()),
    )
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

/// The table's default partition spec.
#[derive(Debug, Clone, Copy)]
pub struct DefaultSpec {
    pub id: i32,
    /// No fields (or no such spec): every row goes to the one unpartitioned place.
    pub unpartitioned: bool,
}

fn default_spec(md: &TableMetadata) -> DefaultSpec {
    let id = md.default_spec_id();
    DefaultSpec {
        id,
        unpartitioned: md.partition_spec(id).is_none_or(|s| s.fields.is_empty()),
    }
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

/// The fields of the default spec as output folders name them (name, transform, result type).
pub(super) fn output_path_fields(
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
