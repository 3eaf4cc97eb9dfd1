//! The rewrite's plan on one snapshot: which manifests are rewritten into which new ones
//! ([`super::decide`], pure), with the manifests to rewrite read whole. EXPLAIN prints it, a dry
//! run counts it, a run writes it (`write.rs`) and commits (`execute.rs`).

use futures::{StreamExt, TryStreamExt};

use super::decide::{KeepReason, ManifestVerdict, Selection, select, target_size};
use super::execute::{PROCEDURE, RewriteManifestsOutcome, Written, noop};
use super::explain::{PlannedManifest, explain_rows};
use super::write::{Output, regroup, write_outputs};
use crate::error::{Error, Result};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::{Manifest, inherit, read_manifest};
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::Snapshot;
use crate::io::FileIO;
use crate::maintain::target::MaintenanceTarget;
use crate::plan::RewriteManifestsOptions;
use crate::progress::Phase;

/// What the rewrite decided on one snapshot's manifest list.
pub struct ManifestPlan {
    list: Vec<ManifestFile>,
    selection: Selection,
    /// The manifests rewritten, read whole (`None` for those kept).
    manifests: Vec<Option<Manifest>>,
    outputs: Vec<Output>,
    target_bytes: i64,
    dry_run: bool,
}

impl ManifestPlan {
    /// Decide on `located`'s current snapshot, whose manifest list is `list`, and read the
    /// manifests to rewrite.
    pub(super) async fn decide(
        target: &MaintenanceTarget,
        located: &LocatedMetadata,
        list: Vec<ManifestFile>,
        options: &RewriteManifestsOptions,
    ) -> Result<ManifestPlan> {
        let metadata = &located.metadata;
        if let Some(id) = options.spec_id
            && metadata.partition_spec(id).is_none()
        {
            return Err(Error::bad_arguments(format!(
                "{PROCEDURE}: table {} has no partition spec with id {id}",
                target.table_name
            )));
        }
        let target_bytes = target_size(options.target_manifest_size_bytes, metadata.properties())?;
        let below_threshold = options
            .min_manifest_count
            .is_some_and(|min| list.len() as u64 <= min);
        let selection = if below_threshold {
            Selection {
                verdicts: vec![ManifestVerdict::Keep(KeepReason::BelowMinCount); list.len()],
                groups: Vec::new(),
            }
        } else {
            select(&list, options.spec_id, target_bytes)
        };
        let (manifests, outputs) = if selection.is_noop() {
            (Vec::new(), Vec::new())
        } else {
            let manifests = read_manifests(target, &list, &selection).await?;
            let outputs = regroup(&list, &selection, &manifests);
            (manifests, outputs)
        };
        Ok(ManifestPlan {
            list,
            selection,
            manifests,
            outputs,
            target_bytes,
            dry_run: options.dry_run,
        })
    }

    /// Nothing to rewrite.
    pub(super) fn is_noop(&self) -> bool {
        self.selection.is_noop()
    }

    fn planned(&self) -> Vec<PlannedManifest> {
        self.outputs.iter().map(|o| o.planned.clone()).collect()
    }

    /// The plan, printed.
    pub(super) fn explain(self) -> RewriteManifestsOutcome {
        let mut outcome = noop(self.dry_run);
        let planned = self.planned();
        outcome.explain = Some(explain_rows(
            &self.list,
            &self.selection,
            &planned,
            self.target_bytes,
        ));
        outcome
    }

    /// The plan, counted.
    pub(super) fn count(self) -> RewriteManifestsOutcome {
        let mut outcome = noop(self.dry_run);
        if !self.is_noop() {
            outcome.metrics.rewritten_manifests_count = self.selection.rewritten_count() as i64;
            outcome.metrics.added_manifests_count = self.outputs.len() as i64;
        }
        outcome
    }

    /// Write the new manifests.
    pub(super) async fn write(
        &self,
        target: &MaintenanceTarget,
        metadata: &TableMetadata,
    ) -> Result<Written> {
        write_outputs(
            target,
            metadata,
            &self.list,
            &self.selection,
            &self.manifests,
            &self.outputs,
        )
        .await
    }
}

/// The manifests of the rewritten groups, read whole, inherited fields made explicit (seed
/// 001's rule): `None` for the manifests that are kept.
async fn read_manifests(
    target: &MaintenanceTarget,
    list: &[ManifestFile],
    selection: &Selection,
) -> Result<Vec<Option<Manifest>>> {
    let wanted: Vec<usize> = selection
        .groups
        .iter()
        .flat_map(|g| g.manifests.iter().copied())
        .collect();
    target
        .progress
        .phase(Phase::ReadingManifests, Some(wanted.len()))?;
    let io = &target.io;
    let concurrency = target.settings.metadata_read_concurrency();
    let mut out: Vec<Option<Manifest>> = vec![None; list.len()];
    let mut reads = futures::stream::iter(wanted)
        .map(|i| async move {
            let m = &list[i];
            let bytes = io.read_immutable(&m.manifest_path, m.length()).await?;
            let mut manifest = read_manifest(&bytes, &m.manifest_path)?;
            inherit(&mut manifest.entries, m);
            Ok::<_, Error>((i, bytes.len(), manifest))
        })
        .buffer_unordered(concurrency)
        .boxed();
    while let Some((i, len, manifest)) = reads.try_next().await? {
        target.progress.advance(1, len as u64);
        out[i] = Some(manifest);
    }
    Ok(out)
}

pub(super) async fn read_list(io: &FileIO, snapshot: &Snapshot) -> Result<Vec<ManifestFile>> {
    let Some(path) = &snapshot.manifest_list else {
        return Err(Error::not_implemented(format!(
            "{PROCEDURE}: snapshot {} lists its manifests inline (v1 without a manifest list); \
             rewriting them is not supported",
            snapshot.snapshot_id
        )));
    };
    let bytes = io.read_immutable(path, None).await?;
    read_manifest_list(&bytes, path)
}
