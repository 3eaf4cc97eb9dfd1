//! Reading the starting state of a compaction: every live content file of the current snapshot,
//! with full manifest entries (metrics, partition, sequence numbers inherited).

use futures::{StreamExt, TryStreamExt};

use super::model::{LiveFile, partition_text};
use crate::error::{Error, Result};
use crate::iceberg::manifest::{inherit, read_manifest};
use crate::iceberg::manifest_list::read_manifest_list;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::Snapshot;
use crate::io::FileIO;

/// The live files of `snapshot`: data files and delete files.
#[derive(Debug, Clone, Default)]
pub struct TableState {
    pub data: Vec<LiveFile>,
    pub deletes: Vec<LiveFile>,
}

/// Reads every manifest of `snapshot` (at most `concurrency` at once).
pub async fn read_state(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
    concurrency: usize,
) -> Result<TableState> {
    let Some(list_path) = &snapshot.manifest_list else {
        return Err(Error::not_implemented(format!(
            "Snapshot {} lists its manifests inline (v1 without a manifest list); compaction \
             does not support it",
            snapshot.snapshot_id
        )));
    };
    let bytes = io.read_immutable(list_path, None).await?;
    let list = read_manifest_list(&bytes, list_path)?;
    let manifests: Vec<_> = futures::stream::iter(list.iter())
        .map(|m| async move {
            io.read_immutable(&m.manifest_path, m.length())
                .await
                .map(|b| (m, b))
        })
        .buffered(concurrency.max(1))
        .try_collect()
        .await?;
    let mut state = TableState::default();
    for (m, bytes) in manifests {
        let mut manifest = read_manifest(&bytes, &m.manifest_path)?;
        inherit(&mut manifest.entries, m);
        let spec_unpartitioned = metadata
            .partition_spec(m.partition_spec_id)
            .is_none_or(|s| s.fields.is_empty());
        for e in manifest.entries {
            if !e.status.is_live() {
                continue;
            }
            let live = LiveFile {
                spec_id: m.partition_spec_id,
                spec_unpartitioned,
                partition: partition_text(&e.data_file.partition),
                data_sequence_number: e.sequence_number.unwrap_or(0),
                file: e.data_file,
            };
            if live.is_data() {
                state.data.push(live);
            } else {
                state.deletes.push(live);
            }
        }
    }
    Ok(state)
}
