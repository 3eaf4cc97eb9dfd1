//! Which delete files apply to which data files, and which delete files a compaction may drop
//! (Iceberg spec, "Scan Planning"; pure).
//!
//! - A **position delete file** (or v3 deletion vector) applies to a data file when the data
//!   file's data sequence number is `<=` the delete file's, and either its `referenced_data_file`
//!   names the data file, or (no reference) the delete file is in the data file's spec and
//!   partition or in an unpartitioned spec. Inside the file only rows naming the data file's path
//!   delete anything.
//! - An **equality delete file** applies when the data file's data sequence number is strictly
//!   `<` the delete file's, and the delete file is in the data file's spec and partition or in an
//!   unpartitioned spec (a global equality delete).
//! - The new files of a compaction carry the starting snapshot's sequence number `S` as their data
//!   sequence number. Every delete file live at the start has a sequence number `<= S`: an equality
//!   delete no longer applies to them (`S < S` is false) and a position delete names old paths
//!   only, so the deletes applied while rewriting are applied exactly once. A delete committed
//!   after the start (sequence number `> S`) would still apply: the commit loop refuses groups it
//!   touches instead (`conflicts.rs`).
//! - A delete file leaves the new snapshot when it applied to a rewritten file and no data file
//!   that stays live still needs it: an equality delete is needed by any remaining file it
//!   applies to; a position delete by a remaining file it applies to and (when its contents were
//!   read) whose path it names.

use std::collections::{HashMap, HashSet};

use super::model::LiveFile;
use crate::iceberg::spec::DataContent;

/// Whether `delete` applies to `data` (see the module comment).
pub fn applies(delete: &LiveFile, data: &LiveFile) -> bool {
    let in_scope = delete.same_partition(data) || delete.spec_unpartitioned;
    match delete.content() {
        DataContent::Data => false,
        DataContent::PositionDeletes => {
            if data.data_sequence_number > delete.data_sequence_number {
                return false;
            }
            match &delete.file.referenced_data_file {
                Some(path) => path == data.path(),
                None => in_scope,
            }
        }
        DataContent::EqualityDeletes => {
            data.data_sequence_number < delete.data_sequence_number && in_scope
        }
    }
}

/// Indexes into `deletes` of the delete files that apply to `data`.
pub fn applicable(deletes: &[LiveFile], data: &LiveFile) -> Vec<usize> {
    deletes
        .iter()
        .enumerate()
        .filter(|(_, d)| applies(d, data))
        .map(|(i, _)| i)
        .collect()
}

/// The delete files (paths) a compaction that rewrote `rewritten` may drop, given the data files
/// that stay live (`remaining`). `mentions`: for position delete files whose contents were read,
/// the data file paths they name.
pub fn droppable(
    deletes: &[LiveFile],
    rewritten: &[&LiveFile],
    remaining: &[&LiveFile],
    mentions: &HashMap<String, HashSet<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for d in deletes {
        let used = rewritten.iter().any(|f| applies(d, f));
        if !used {
            continue;
        }
        let needed = remaining.iter().any(|f| {
            applies(d, f)
                && match (d.content(), mentions.get(d.path())) {
                    (DataContent::PositionDeletes, Some(named)) => named.contains(f.path()),
                    _ => true,
                }
        });
        if !needed {
            out.push(d.path().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::manifest::DataFile;

    pub(crate) fn file(
        content: DataContent,
        path: &str,
        partition: &str,
        seq: i64,
        spec_unpartitioned: bool,
    ) -> LiveFile {
        LiveFile {
            file: DataFile::new(content, path, 10, 100),
            spec_id: if spec_unpartitioned { 0 } else { 1 },
            spec_unpartitioned,
            partition: partition.into(),
            data_sequence_number: seq,
        }
    }

    #[test]
    fn sequence_number_rules() {
        let data = file(DataContent::Data, "d1", "p=1", 5, false);
        let pos_same = file(DataContent::PositionDeletes, "pd", "p=1", 5, false);
        let pos_older = file(DataContent::PositionDeletes, "pd0", "p=1", 4, false);
        let eq_same = file(DataContent::EqualityDeletes, "ed", "p=1", 5, false);
        let eq_newer = file(DataContent::EqualityDeletes, "ed2", "p=1", 6, false);
        let eq_other = file(DataContent::EqualityDeletes, "ed3", "p=2", 6, false);
        let eq_global = file(DataContent::EqualityDeletes, "ed4", "", 6, true);
        assert!(applies(&pos_same, &data));
        assert!(!applies(&pos_older, &data));
        assert!(!applies(&eq_same, &data));
        assert!(applies(&eq_newer, &data));
        assert!(!applies(&eq_other, &data));
        assert!(applies(&eq_global, &data));
        let mut dv = file(DataContent::PositionDeletes, "dv.puffin", "p=2", 9, false);
        dv.file.referenced_data_file = Some("d1".into());
        assert!(
            applies(&dv, &data),
            "a referenced file applies across partitions"
        );
        dv.file.referenced_data_file = Some("d2".into());
        assert!(!applies(&dv, &data));
    }

    #[test]
    fn a_delete_still_needed_stays() {
        let d1 = file(DataContent::Data, "d1", "p=1", 1, false);
        let d2 = file(DataContent::Data, "d2", "p=1", 1, false);
        let eq = file(DataContent::EqualityDeletes, "eq", "p=1", 2, false);
        let pos = file(DataContent::PositionDeletes, "pos", "p=1", 2, false);
        let deletes = [eq.clone(), pos.clone()];
        // Both rewritten: both deletes go.
        let none = HashMap::new();
        assert_eq!(droppable(&deletes, &[&d1, &d2], &[], &none), ["eq", "pos"]);
        // d2 stays: the equality delete is needed; the position delete is unless we know it
        // names only d1.
        assert!(droppable(&deletes, &[&d1], &[&d2], &none).is_empty());
        let mut mentions = HashMap::new();
        mentions.insert("pos".to_string(), HashSet::from(["d1".to_string()]));
        assert_eq!(droppable(&deletes, &[&d1], &[&d2], &mentions), ["pos"]);
        // A delete that applied to nothing rewritten is not ours to drop.
        let other = file(DataContent::EqualityDeletes, "eq9", "p=9", 2, false);
        assert!(droppable(&[other], &[&d1], &[], &none).is_empty());
    }
}
