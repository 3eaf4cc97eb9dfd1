//! The compaction executor in the procedure shape: the plan comes from `prepare.rs`; a run
//! rewrites its groups, then commits them (`commit.rs`: a `replace` snapshot through the commit
//! protocol, re-judged against the start on every attempt after the first).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};

use super::CompactOutcome;
use super::commit::{Rewritten, commit_loop, delete_uncommitted, removable_deletes};
use super::explain::explain_rows;
use super::group::{GroupJob, rewrite_group, with_leftovers};
use super::metrics::CompactMetrics;
use super::model::LiveFile;
use super::path::partition_path;
use super::plan::{Group, Output};
use super::prepare::{CompactPlan, Planned, output_path_fields, prepare};
use super::rewrite::GroupWriter;
use super::stats::leaf_infos;
use super::writer::{WriteConfig, writer_properties};
use crate::error::Result;
use crate::iceberg::manifest::PartitionTuple;
use crate::iceberg::metadata::TableMetadata;
use crate::maintain::shape::{Intent, MaintenanceProcedure};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::CompactOptions;
use crate::progress::Phase;
use serde_json::Value as Json;

/// `rewrite_data_files` / `OPTIMIZE TABLE` in the procedure shape.
pub struct Compact;

impl MaintenanceProcedure for Compact {
    type Options = CompactOptions;
    type Plan = CompactPlan;
    type Outcome = CompactOutcome;
    const PHASES: &'static [Phase] = &[Phase::RewritingFileGroups];

    fn name(_: &CompactOptions) -> String {
        super::PROCEDURE.to_string()
    }

    fn dry_run(options: &CompactOptions) -> bool {
        options.dry_run
    }

    async fn plan(
        target: &MaintenanceTarget,
        options: &CompactOptions,
        _: Intent,
    ) -> Result<CompactPlan> {
        prepare(target, options).await
    }

    fn explain(plan: CompactPlan) -> CompactOutcome {
        match plan {
            CompactPlan::NoSnapshot { warnings, .. } => CompactOutcome {
                metrics: CompactMetrics::default(),
                explain: Some(Vec::new()),
                warnings,
            },
            CompactPlan::Groups(p) => CompactOutcome {
                metrics: CompactMetrics::default(),
                explain: Some(explain_rows(&p.plan, &p.state.deletes)),
                warnings: p.warnings,
            },
        }
    }

    fn count(plan: CompactPlan) -> CompactOutcome {
        tally(plan)
    }

    async fn execute(
        target: &MaintenanceTarget,
        _: &CompactOptions,
        plan: CompactPlan,
    ) -> Result<CompactOutcome> {
        match plan {
            CompactPlan::Groups(p) if p.plan.rewritten().next().is_some() => {
                rewrite_and_commit(target, *p).await
            }
            nothing => Ok(tally(nothing)),
        }
    }
}

/// The plan counted: the metrics of a dry run, or of a run with no group to rewrite.
fn tally(plan: CompactPlan) -> CompactOutcome {
    let p = match plan {
        CompactPlan::NoSnapshot { dry_run, warnings } => {
            return CompactOutcome {
                metrics: CompactMetrics {
                    dry_run,
                    ..Default::default()
                },
                explain: None,
                warnings,
            };
        }
        CompactPlan::Groups(p) => *p,
    };
    let groups: Vec<&Group> = p.plan.rewritten().collect();
    let rewritten: Vec<&LiveFile> = groups
        .iter()
        .flat_map(|g| g.inputs.iter().map(|i| &p.state.data[*i]))
        .collect();
    let removed = removable_deletes(&p.state, &rewritten, &HashMap::new());
    let mut warnings = p.warnings;
    warnings.extend(p.over_memory);
    CompactOutcome {
        metrics: CompactMetrics {
            rewritten_data_files_count: rewritten.len() as i64,
            added_data_files_count: groups.iter().map(|g| g.expected_outputs as i64).sum(),
            rewritten_bytes_count: groups.iter().map(|g| g.input_bytes as i64).sum(),
            added_bytes_count: 0,
            removed_delete_files_count: removed.len() as i64,
            rewritten_file_groups_count: groups.len() as i64,
            failed_data_files_count: 0,
            dry_run: p.dry_run,
        },
        explain: None,
        warnings,
    }
}

/// Rewrite the plan's groups, then commit them.
async fn rewrite_and_commit(
    target: &MaintenanceTarget,
    planned: Planned,
) -> Result<CompactOutcome> {
    let Planned {
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
        dry_run: _,
        mut warnings,
        over_memory,
    } = planned;
    warnings.extend(over_memory);
    let md = &located.metadata;
    let groups: Vec<(usize, &Group)> = plan.rewritten().map(|g| (g.index, g)).collect();
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
    let path_fields = output_path_fields(md, default_spec.id, &schema_json)?;
    let dir_of = |partition: &PartitionTuple| -> String {
        let folder = partition_path(&path_fields, partition);
        if folder.is_empty() {
            config.data_dir.clone()
        } else {
            format!("{}/{folder}", config.data_dir)
        }
    };
    let partition_of = |g: &Group| -> PartitionTuple {
        match &g.output {
            Output::Partition(v) => v.clone(),
            Output::Split => PartitionTuple::default(),
        }
    };
    let total_bytes = groups.iter().map(|(_, g)| g.input_bytes).sum();
    target.progress.phase_sized(
        Phase::RewritingFileGroups,
        Some(groups.len()),
        Some(total_bytes),
    )?;
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
                target.progress.advance(1, 0);
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
