//! Which delete files apply to which data files, and which delete files a compaction may drop
//! (Iceberg spec, "Scan Planning"; pure).
//!
//! - A **position delete file** (or v3 deletion vector) applies to a data file when the data
//!   file's data sequence number is `<=` the delete file's, and either its `referenced_data_file`
//!   names the data file, or (no reference) the delete file is in the data file's spec and
//!   partition (an unpartitioned spec's position deletes apply to that spec's files only). Inside
//!   the file only rows naming the data file's path delete anything.
//! - A position delete file **out of scope** for a data file: no `referenced_data_file`, another
//!   spec or partition, a data sequence number the data file's is `<=`. By the spec it does not
//!   apply, yet its rows may name the data file's path: ClickHouse writes such files after a
//!   spec change (deletes of older-spec rows filed under the newest spec), pyiceberg 0.12 applies
//!   them, ClickHouse does not, Java does when the file's `file_path` bounds are one path.
//!   Compaction leaves data files they name alone (`disputed.rs`) and never drops such a delete
//!   file while a data file it may name stays live.
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
//!   applies to; a position delete by a remaining file it applies to, or is out of scope for,
//!   and (when its contents were read) whose path it names, (else) whose path its `file_path`
//!   bounds admit.

use std::collections::{HashMap, HashSet};

use super::model::LiveFile;
use crate::iceberg::spec::DataContent;

/// The field id of a position delete file's `file_path` column.
pub const DELETE_FILE_PATH: i32 = 2_147_483_546;

/// Whether `delete` applies to `data` (see the module comment).
pub fn applies(delete: &LiveFile, data: &LiveFile) -> bool {
    match delete.content() {
        DataContent::Data => false,
        DataContent::PositionDeletes => {
            if data.data_sequence_number > delete.data_sequence_number {
                return false;
            }
            match &delete.file.referenced_data_file {
                Some(path) => path == data.path(),
                None => delete.same_partition(data),
            }
        }
        DataContent::EqualityDeletes => {
            data.data_sequence_number < delete.data_sequence_number
                && (delete.same_partition(data) || delete.spec_unpartitioned)
        }
    }
}

/// Whether `delete` is a position delete file out of scope for `data` (see the module comment).
pub fn out_of_scope(delete: &LiveFile, data: &LiveFile) -> bool {
    delete.content() == DataContent::PositionDeletes
        && !delete.is_deletion_vector()
        && delete.file.referenced_data_file.is_none()
        && !delete.same_partition(data)
        && data.data_sequence_number <= delete.data_sequence_number
}

/// What a position delete file's `file_path` bounds say about naming `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `path` lies outside the bounds: no row names it.
    Never,
    /// Both bounds are `path`: every row names it (Java takes such a file as `path`'s own).
    Only,
    /// The bounds admit `path`, or are missing: only the rows can tell.
    Maybe,
}

/// What `delete`'s `file_path` bounds say about `path` (bounds truncated by a writer still bound
/// the values: a lower bound is a prefix, an upper bound rounded up).
pub fn bounds_name(delete: &LiveFile, path: &str) -> Naming {
    let bound = |b: &Option<std::collections::BTreeMap<i32, Vec<u8>>>| {
        b.as_ref().and_then(|m| m.get(&DELETE_FILE_PATH)).cloned()
    };
    let (lower, upper) = (
        bound(&delete.file.lower_bounds),
        bound(&delete.file.upper_bounds),
    );
    let path = path.as_bytes();
    if lower.as_deref().is_some_and(|l| path < l) || upper.as_deref().is_some_and(|u| path > u) {
        return Naming::Never;
    }
    if lower.as_deref() == Some(path) && upper.as_deref() == Some(path) {
        return Naming::Only;
    }
    Naming::Maybe
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
        let needed = remaining.iter().any(|f| needs(d, f, mentions));
        if !needed {
            out.push(d.path().to_string());
        }
    }
    out
}

/// Whether data file `data`, staying live, keeps `delete` in the snapshot: `delete` applies to
/// it or is out of scope for it, and may name it (by its rows when `mentions` has them, else by
/// its bounds). Keeping an out-of-scope file keeps every reader reading `data` as before.
pub fn needs(
    delete: &LiveFile,
    data: &LiveFile,
    mentions: &HashMap<String, HashSet<String>>,
) -> bool {
    let named = || match (delete.content(), mentions.get(delete.path())) {
        (DataContent::PositionDeletes, Some(named)) => named.contains(data.path()),
        (DataContent::PositionDeletes, None) => bounds_name(delete, data.path()) != Naming::Never,
        _ => true,
    };
    (applies(delete, data) || out_of_scope(delete, data)) && named()
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
        // An unpartitioned spec's position deletes apply to that spec's files only.
        let mut other_spec = file(DataContent::Data, "d3", "", 5, true);
        other_spec.spec_id = 7;
        let pos_global = file(DataContent::PositionDeletes, "pg", "", 5, true);
        assert!(!applies(&pos_global, &data) && !applies(&pos_global, &other_spec));
        assert!(out_of_scope(&pos_global, &data) && out_of_scope(&pos_global, &other_spec));
        assert!(applies(
            &pos_global,
            &file(DataContent::Data, "d4", "", 5, true)
        ));
        assert!(!out_of_scope(&pos_same, &data) && !out_of_scope(&pos_older, &data));
        assert!(!out_of_scope(&eq_other, &data));
    }

    #[test]
    fn file_path_bounds() {
        let mut d = file(DataContent::PositionDeletes, "pd", "p=1", 5, false);
        assert_eq!(bounds_name(&d, "s3://b/x"), Naming::Maybe);
        let bounds = |v: &str| Some([(DELETE_FILE_PATH, v.as_bytes().to_vec())].into());
        d.file.lower_bounds = bounds("s3://b/data/f2");
        d.file.upper_bounds = bounds("s3://b/data/f5");
        assert_eq!(bounds_name(&d, "s3://b/data/f1"), Naming::Never);
        assert_eq!(bounds_name(&d, "s3://b/data/f3"), Naming::Maybe);
        assert_eq!(bounds_name(&d, "s3://b/data/f5"), Naming::Maybe);
        assert_eq!(bounds_name(&d, "s3://b/data/f6"), Naming::Never);
        d.file.upper_bounds = bounds("s3://b/data/f2");
        assert_eq!(bounds_name(&d, "s3://b/data/f2"), Naming::Only);
    }

    #[test]
    fn an_out_of_scope_delete_stays_while_a_file_it_names_stays() {
        // ClickHouse after a spec change: the delete is filed under spec 2, names rows of d_old
        // (spec 1) and of d_new (spec 2, its own partition).
        let d_old = file(DataContent::Data, "d_old", "p=1", 1, false);
        let mut d_new = file(DataContent::Data, "d_new", "q=1", 1, false);
        d_new.spec_id = 2;
        let mut pos = file(DataContent::PositionDeletes, "pos", "q=1", 2, false);
        pos.spec_id = 2;
        assert!(applies(&pos, &d_new) && out_of_scope(&pos, &d_old));
        let mut mentions = HashMap::new();
        mentions.insert(
            "pos".to_string(),
            HashSet::from(["d_old".to_string(), "d_new".to_string()]),
        );
        let all = [pos.clone()];
        assert!(droppable(&all, &[&d_new], &[&d_old], &mentions).is_empty());
        assert!(droppable(&all, &[&d_new], &[&d_old], &HashMap::new()).is_empty());
        mentions.insert("pos".to_string(), HashSet::from(["d_new".to_string()]));
        assert_eq!(droppable(&all, &[&d_new], &[&d_old], &mentions), ["pos"]);
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
