//! What a compaction may still commit after someone else committed first (pure).
//!
//! The new snapshot is built on the newest metadata. Compared with the starting snapshot, a
//! group fails (its files are left as they are and counted in `failed_data_files_count`) when
//! - one of its input files is no longer live (rewritten, deleted or overwritten meanwhile), or
//! - a delete file live now but not at the start applies to one of its inputs (position,
//!   equality or deletion vector: the rows it deletes would come back in our output), or
//! - the default partition spec changed (our outputs were written for the old one).
//!
//! Comparing the newest live set with the start covers every snapshot committed since: whatever
//! they did that still matters shows in the newest state, and what they undid does not matter to
//! the rows of the snapshot we write. Groups that pass commit; nothing is lost or resurrected.

use std::collections::HashSet;

use super::deletes::applies;
use super::model::LiveFile;

/// Why group `index` cannot commit on the newest state; `None`: it can.
pub fn group_conflict(
    inputs: &[&LiveFile],
    start_deletes: &HashSet<&str>,
    now_data: &HashSet<&str>,
    now_deletes: &[LiveFile],
    default_spec_changed: bool,
) -> Option<String> {
    if default_spec_changed {
        return Some("the default partition spec changed".into());
    }
    if let Some(gone) = inputs.iter().find(|f| !now_data.contains(f.path())) {
        return Some(format!("'{}' is no longer live", gone.path()));
    }
    for d in now_deletes {
        if start_deletes.contains(d.path()) {
            continue;
        }
        if let Some(hit) = inputs.iter().find(|f| applies(d, f)) {
            return Some(format!(
                "delete file '{}' committed meanwhile applies to '{}'",
                d.path(),
                hit.path()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::manifest::DataFile;
    use crate::iceberg::spec::DataContent;

    fn f(content: DataContent, path: &str, seq: i64) -> LiveFile {
        LiveFile {
            file: DataFile::new(content, path, 1, 1),
            spec_id: 0,
            spec_unpartitioned: false,
            partition: "p=1".into(),
            data_sequence_number: seq,
        }
    }

    #[test]
    fn new_deletes_and_vanished_inputs_fail_a_group() {
        let a = f(DataContent::Data, "a", 1);
        let start: HashSet<&str> = HashSet::from(["old-del"]);
        let now_data: HashSet<&str> = HashSet::from(["a", "b"]);
        let old = f(DataContent::PositionDeletes, "old-del", 1);
        assert_eq!(
            group_conflict(&[&a], &start, &now_data, std::slice::from_ref(&old), false),
            None
        );
        let new_pos = f(DataContent::PositionDeletes, "new-del", 2);
        assert!(
            group_conflict(&[&a], &start, &now_data, &[old.clone(), new_pos], false)
                .unwrap()
                .contains("new-del")
        );
        let new_eq = f(DataContent::EqualityDeletes, "new-eq", 2);
        assert!(group_conflict(&[&a], &start, &now_data, &[new_eq], false).is_some());
        let mut elsewhere = f(DataContent::EqualityDeletes, "eq-p2", 2);
        elsewhere.partition = "p=2".into();
        assert_eq!(
            group_conflict(&[&a], &start, &now_data, &[elsewhere], false),
            None
        );
        let gone: HashSet<&str> = HashSet::from(["b"]);
        assert!(
            group_conflict(&[&a], &start, &gone, &[], false)
                .unwrap()
                .contains("no longer live")
        );
        assert!(group_conflict(&[&a], &start, &now_data, &[], true).is_some());
    }
}
