//! The memory budget of a compaction (pure): how `iceberg_compaction_max_memory_bytes` is shared
//! between the file groups rewritten at once and, inside one group, between the parts that hold
//! memory. The executor and the writer obey these figures; the planner splits groups whose delete
//! files would not fit (`plan.rs`).
//!
//! 1. Groups in flight: `min(max_concurrent_file_group_rewrites, budget / 64 MiB)`, at least 1;
//!    each gets an equal `share`. A budget below [`MIN_BUDGET`] is refused (`BAD_ARGUMENTS`).
//! 2. Inside a share, after the output upload's parts ([`UPLOAD_BYTES`]: one 8 MiB part filling,
//!    at most two uploading), the rest (`avail`) is divided:
//!    - the output row group being encoded: `avail / 4` (the writer flushes a row group once its
//!      buffered memory reaches this, or the table's `write.parquet.row-group-size-bytes` if
//!      smaller);
//!    - the input being read: `avail / 8` (a file up to this size, at most 32 MiB, is read in one
//!      request; larger ones by ranges, page by page);
//!    - decoded batches: `avail / 8`, shared by the three copies a batch may have at once (decoded,
//!      adapted to the table schema, filtered by deletes), so a batch aims at `avail / 24`;
//!    - with a sort order, the sort buffer: `avail / 4`, shared by the buffered rows, their
//!      concatenation and the sorted copy, so the buffer holds `avail / 12` of decoded rows; a
//!      group larger than that is sorted in runs spilled to local disk, whose merge holds about
//!      one buffer of rows (`sort.rs`);
//!    - the delete files loaded for the group: the rest (`avail / 4` sorted, `avail / 2` unsorted).
//!
//! What is not counted: the table's metadata (manifest entries of the snapshot), the process
//! itself, and allocator overhead; a single decoded row larger than a batch's share is refused
//! (`MEMORY_LIMIT_EXCEEDED`) rather than read.

use super::model::LiveFile;
use crate::error::{Error, Result};
use crate::iceberg::spec::DataContent;

const MIB: u64 = 1 << 20;
/// The smallest budget a compaction runs with.
pub const MIN_BUDGET: u64 = 32 * MIB;
/// The share below which groups are not run concurrently.
pub const GROUP_SHARE: u64 = 64 * MIB;
/// An output file's upload: one 8 MiB part filling, and at most two uploading (the writer waits
/// for all but one to finish after each 8 MiB it writes).
pub const UPLOAD_BYTES: u64 = 24 * MIB;
/// Inputs up to this size are read in one request when their share allows.
pub const MAX_WHOLE_FILE: u64 = 32 * MIB;

/// The budget's split (bytes), the same for every group of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPlan {
    pub budget: u64,
    /// Groups rewritten at once.
    pub in_flight: u64,
    /// Each group's share of the budget.
    pub share: u64,
    /// The writer flushes a row group once it buffers this much.
    pub output_row_group: u64,
    /// Inputs up to this size are read whole; larger ones by ranges.
    pub whole_file: u64,
    /// A decoded batch aims at this size.
    pub batch: u64,
    /// Decoded rows buffered for sorting (0 without a sort order).
    pub sort_buffer: u64,
    /// The delete files loaded for one group.
    pub deletes: u64,
}

impl MemoryPlan {
    /// The split of `budget` for `max_concurrent` groups; `sorted` when the table has a sort
    /// order.
    pub fn new(budget: u64, max_concurrent: u64, sorted: bool) -> Result<MemoryPlan> {
        if budget < MIN_BUDGET {
            return Err(Error::bad_arguments(format!(
                "iceberg_compaction_max_memory_bytes = {budget} is below the {MIN_BUDGET} bytes \
                 (32 MiB) a compaction needs at least"
            )));
        }
        let in_flight = (budget / GROUP_SHARE).clamp(1, max_concurrent.max(1));
        let share = budget / in_flight;
        let avail = share - UPLOAD_BYTES;
        let sort = if sorted { avail / 4 } else { 0 };
        Ok(MemoryPlan {
            budget,
            in_flight,
            share,
            output_row_group: avail / 4,
            whole_file: (avail / 8).min(MAX_WHOLE_FILE),
            batch: avail / 24,
            sort_buffer: sort / 3,
            deletes: avail - avail / 4 - avail / 8 - avail / 8 - sort,
        })
    }

    /// Rows per decoded batch for rows of `row_bytes` decoded bytes on average (at most 8,192);
    /// `None` when a single row is larger than a batch's share.
    pub fn batch_rows(&self, row_bytes: u64) -> Option<usize> {
        if row_bytes > self.batch {
            return None;
        }
        Some((self.batch / row_bytes.max(1)).clamp(1, 8192) as usize)
    }
}

/// Memory a loaded delete file keeps for the whole group: an equality delete's rows in a hash
/// set (about four times the file plus 64 bytes a row), a position delete's positions in a
/// bitmap (at most 8 bytes a row), a deletion vector's bitmap (its blob, twice).
pub fn delete_resident(d: &LiveFile) -> u64 {
    let size = d.file.file_size_in_bytes.max(0) as u64;
    let rows = d.file.record_count.max(0) as u64;
    match d.content() {
        DataContent::Data => 0,
        DataContent::EqualityDeletes => size.saturating_mul(4).saturating_add(rows * 64),
        DataContent::PositionDeletes if d.is_deletion_vector() => d
            .file
            .content_size_in_bytes
            .map_or(size, |s| s.max(0) as u64)
            .saturating_mul(2),
        DataContent::PositionDeletes => rows.saturating_mul(8),
    }
}

/// Memory a delete file needs while it is loaded (its bytes and one decoded batch), one at a time.
pub fn delete_transient(d: &LiveFile) -> u64 {
    let size = d.file.file_size_in_bytes.max(0) as u64;
    match d.content() {
        DataContent::Data => 0,
        _ if d.is_deletion_vector() => d
            .file
            .content_size_in_bytes
            .map_or(size, |s| s.max(0) as u64),
        _ => size.saturating_mul(2),
    }
}

/// The memory the delete files `deletes` need when loaded for one group.
pub fn deletes_estimate<'a>(deletes: impl IntoIterator<Item = &'a LiveFile>) -> u64 {
    let mut resident = 0u64;
    let mut transient = 0u64;
    for d in deletes {
        resident = resident.saturating_add(delete_resident(d));
        transient = transient.max(delete_transient(d));
    }
    resident.saturating_add(transient)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::manifest::DataFile;

    fn delete(content: DataContent, size: i64, rows: i64) -> LiveFile {
        LiveFile {
            file: DataFile::new(content, "d", rows, size),
            spec_id: 0,
            spec_unpartitioned: true,
            partition: String::new(),
            data_sequence_number: 1,
        }
    }

    #[test]
    fn the_parts_of_a_share_fit_it() {
        for budget in [MIN_BUDGET, 64 * MIB, 100 * MIB, 2 << 30, 64 << 30] {
            for max_concurrent in [1, 5, 100] {
                for sorted in [false, true] {
                    let m = MemoryPlan::new(budget, max_concurrent, sorted).unwrap();
                    assert!(m.in_flight >= 1 && m.in_flight <= max_concurrent);
                    assert!(m.in_flight * m.share <= budget);
                    let used = UPLOAD_BYTES
                        + m.output_row_group
                        + m.whole_file.max(m.batch * 3)
                        + m.batch * 3
                        + m.sort_buffer * 3
                        + m.deletes;
                    assert!(used <= m.share, "{m:?}");
                    assert_eq!(m.sort_buffer == 0, !sorted);
                    assert!(m.deletes > 0 && m.batch > 0 && m.output_row_group > 0);
                }
            }
        }
    }

    #[test]
    fn small_budgets_run_one_group_and_too_small_is_refused() {
        let m = MemoryPlan::new(64 * MIB, 5, false).unwrap();
        assert_eq!((m.in_flight, m.share), (1, 64 * MIB));
        let m = MemoryPlan::new(2 << 30, 5, false).unwrap();
        assert_eq!(m.in_flight, 5);
        let e = MemoryPlan::new(6400, 5, false).unwrap_err();
        assert!(e.message().contains("iceberg_compaction_max_memory_bytes"));
    }

    #[test]
    fn batch_rows_follow_row_size() {
        let m = MemoryPlan::new(64 * MIB, 1, false).unwrap();
        assert_eq!(m.batch_rows(10), Some(8192));
        assert_eq!(m.batch_rows(m.batch / 100), Some(100));
        assert_eq!(m.batch_rows(m.batch), Some(1));
        assert_eq!(m.batch_rows(m.batch + 1), None);
        assert_eq!(m.batch_rows(0), Some(8192));
    }

    #[test]
    fn delete_estimates() {
        let eq = delete(DataContent::EqualityDeletes, 1000, 10);
        let pos = delete(DataContent::PositionDeletes, 5000, 100);
        assert_eq!(delete_resident(&eq), 4640);
        assert_eq!(delete_resident(&pos), 800);
        assert_eq!(deletes_estimate([&eq, &pos]), 4640 + 800 + 10_000);
        assert_eq!(deletes_estimate([]), 0);
        let mut dv = delete(DataContent::PositionDeletes, 9000, 3);
        dv.file.file_format = "PUFFIN".into();
        dv.file.content_size_in_bytes = Some(40);
        assert_eq!((delete_resident(&dv), delete_transient(&dv)), (80, 40));
    }
}
