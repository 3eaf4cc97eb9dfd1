//! Data files a compaction leaves as they are because a position delete file out of their scope
//! names them (pure; reading delete files is `read.rs`'s [`find_disputed`]).
//!
//! A position delete file without `referenced_data_file` applies, by the spec, only to the data
//! files of its own spec and partition. ClickHouse, after a partition spec change, files the
//! position deletes of older-spec rows under the newest spec: their rows name data files the
//! spec says they do not apply to. Readers disagree on such a table (pyiceberg 0.12 applies them;
//! ClickHouse does not; Iceberg Java does when the file's `file_path` bounds are that one path).
//! Rewriting a named data file would settle the disagreement one way (its rows written with or
//! without those deletes) and change what the other readers return, so such a file is left out
//! of every group: EXPLAIN shows it in a `skip` group with [`REASON`], and a warning names one.
//! The delete file itself stays while such a file stays (`deletes.rs`, `needs`).
//!
//! Finding them costs reading delete files, so only what can matter is read: the candidates are
//! the data files the plan may rewrite (filter and size rules); a delete file is looked at only
//! if it is out of scope for some candidate (position deletes, no reference, another spec or
//! partition, a sequence number the candidate's is `<=`), and read only when its `file_path`
//! bounds admit that candidate's path without being exactly that path (bounds equal to the path
//! name it without reading; bounds that exclude it rule it out; missing bounds admit every
//! path). Candidates are searched by path range, so a delete file costs a binary search.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::deletes::{DELETE_FILE_PATH, Naming, bounds_name, out_of_scope};
use super::model::LiveFile;
use crate::iceberg::spec::DataContent;

/// The reason EXPLAIN gives for the group of such files.
pub const REASON: &str = "a position delete file of another spec or partition names its rows \
    (readers disagree: by the spec and for ClickHouse it does not apply, pyiceberg applies it); \
    left as it is so that every reader reads it as before";

/// What is known before reading any delete file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DisputeCheck {
    /// Data file index → a delete file (index) that names it, known from bounds alone.
    pub named: BTreeMap<usize, usize>,
    /// Delete file index → the candidates (indexes) whose paths only its rows can rule in or out.
    pub to_read: BTreeMap<usize, Vec<usize>>,
}

/// A position delete file's `file_path` bound.
fn path_bound(bounds: &Option<BTreeMap<i32, Vec<u8>>>) -> Option<&[u8]> {
    bounds
        .as_ref()
        .and_then(|m| m.get(&DELETE_FILE_PATH))
        .map(Vec::as_slice)
}

/// Whether `d` could be out of scope for some data file at all.
fn unreferenced_position(d: &LiveFile) -> bool {
    d.content() == DataContent::PositionDeletes
        && !d.is_deletion_vector()
        && d.file.referenced_data_file.is_none()
}

/// The first look: which candidates (indexes into `data`) are named by an out-of-scope delete
/// file from its bounds, and which delete files must be read for which candidates.
pub fn check(data: &[LiveFile], deletes: &[LiveFile], candidates: &[usize]) -> DisputeCheck {
    let mut out = DisputeCheck::default();
    if !deletes.iter().any(unreferenced_position) {
        return out;
    }
    let mut by_path: Vec<usize> = candidates.to_vec();
    by_path.sort_by(|a, b| data[*a].path().cmp(data[*b].path()));
    for (di, d) in deletes.iter().enumerate() {
        if !unreferenced_position(d) {
            continue;
        }
        let start = path_bound(&d.file.lower_bounds).map_or(0, |lo| {
            by_path.partition_point(|i| data[*i].path().as_bytes() < lo)
        });
        let end = path_bound(&d.file.upper_bounds).map_or(by_path.len(), |hi| {
            by_path.partition_point(|i| data[*i].path().as_bytes() <= hi)
        });
        for &fi in by_path.get(start..end).unwrap_or_default() {
            let f = &data[fi];
            if out.named.contains_key(&fi) || !out_of_scope(d, f) {
                continue;
            }
            match bounds_name(d, f.path()) {
                Naming::Never => {}
                Naming::Only => {
                    out.named.insert(fi, di);
                }
                Naming::Maybe => out.to_read.entry(di).or_default().push(fi),
            }
        }
    }
    for files in out.to_read.values_mut() {
        files.retain(|fi| !out.named.contains_key(fi));
    }
    out.to_read.retain(|_, files| !files.is_empty());
    out
}

/// The disputed data files: data file path → the path of a delete file out of its scope that
/// names it. `read`: for each delete file of `check.to_read` that was read, the paths (among
/// the candidates asked for) its rows name.
pub fn resolve(
    data: &[LiveFile],
    deletes: &[LiveFile],
    check: &DisputeCheck,
    read: &HashMap<usize, HashSet<String>>,
) -> HashMap<String, String> {
    let mut named = check.named.clone();
    for (di, files) in &check.to_read {
        let Some(paths) = read.get(di) else {
            continue;
        };
        for fi in files {
            if paths.contains(data[*fi].path()) {
                named.entry(*fi).or_insert(*di);
            }
        }
    }
    named
        .into_iter()
        .map(|(fi, di)| (data[fi].path().to_string(), deletes[di].path().to_string()))
        .collect()
}

/// The warning for `disputed` (data file path → delete file path) in table `table`, if any.
pub fn warning(table: &str, disputed: &HashMap<String, String>) -> Option<String> {
    let (data, delete) = disputed.iter().min()?;
    Some(format!(
        "{table}: {} data file(s) are left as they are: a position delete file of another spec \
         or partition names their rows, and readers disagree on whether it applies (e.g. \
         '{delete}' names '{data}')",
        disputed.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::manifest::DataFile;

    fn live(content: DataContent, path: &str, spec: i32, partition: &str, seq: i64) -> LiveFile {
        LiveFile {
            file: DataFile::new(content, path, 1, 100),
            spec_id: spec,
            spec_unpartitioned: false,
            partition: partition.into(),
            data_sequence_number: seq,
        }
    }

    fn bounded(mut d: LiveFile, lo: &str, hi: &str) -> LiveFile {
        d.file.lower_bounds = Some([(DELETE_FILE_PATH, lo.as_bytes().to_vec())].into());
        d.file.upper_bounds = Some([(DELETE_FILE_PATH, hi.as_bytes().to_vec())].into());
        d
    }

    #[test]
    fn bounds_decide_what_is_read() {
        // Spec 0 files (p=1) a1..a4, a spec 1 file b1 (q=1).
        let data: Vec<LiveFile> = ["a1", "a2", "a3", "a4"]
            .iter()
            .map(|p| live(DataContent::Data, p, 0, "p=1", 1))
            .chain([live(DataContent::Data, "b1", 1, "q=1", 1)])
            .collect();
        let pos =
            |path: &str, spec, part: &str| live(DataContent::PositionDeletes, path, spec, part, 2);
        let deletes = vec![
            // 0: ClickHouse's kind, one path in its bounds: names a2, no read.
            bounded(pos("d0", 1, "q=1"), "a2", "a2"),
            // 1: a range a3..b1: must be read for a3, a4 (b1 is in its scope).
            bounded(pos("d1", 1, "q=1"), "a3", "b1"),
            // 2: in scope for a1..a4; out of scope for b1, and no bounds: read for b1.
            pos("d2", 0, "p=1"),
            // 3: no bounds, another spec than every file: read for all but a2 (named already).
            pos("d3", 2, "r=1"),
            // 4: older than the data: applies to nothing, disputes nothing.
            live(DataContent::PositionDeletes, "d4", 1, "q=1", 0),
            // 5: an equality delete: never.
            live(DataContent::EqualityDeletes, "d5", 1, "q=1", 2),
        ];
        let c = check(&data, &deletes, &[0, 1, 2, 3, 4]);
        assert_eq!(c.named, BTreeMap::from([(1, 0)]));
        assert_eq!(
            c.to_read,
            BTreeMap::from([(1, vec![2, 3]), (2, vec![4]), (3, vec![0, 2, 3, 4])]),
            "a2 is known already"
        );
        // Only candidates count.
        let c2 = check(&data, &deletes, &[0]);
        assert_eq!(c2.named, BTreeMap::new());
        assert_eq!(c2.to_read, BTreeMap::from([(3, vec![0])]));
        // After reading: d1 names a4, d3 names nothing asked for.
        let read = HashMap::from([
            (1, HashSet::from(["a4".to_string()])),
            (3, HashSet::from(["zz".to_string()])),
        ]);
        let disputed = resolve(&data, &deletes, &c, &read);
        assert_eq!(
            disputed,
            HashMap::from([
                ("a2".to_string(), "d0".to_string()),
                ("a4".to_string(), "d1".to_string())
            ])
        );
        let w = warning("t", &disputed).unwrap();
        assert!(
            w.contains("2 data file(s)") && w.contains("'d0' names 'a2'"),
            "{w}"
        );
        assert_eq!(warning("t", &HashMap::new()), None);
    }

    #[test]
    fn nothing_to_do_without_unreferenced_position_deletes() {
        let data = vec![live(DataContent::Data, "a", 0, "p=1", 1)];
        let mut dv = live(DataContent::PositionDeletes, "dv", 1, "q=1", 2);
        dv.file.file_format = "PUFFIN".into();
        dv.file.referenced_data_file = Some("a".into());
        let mut referenced = live(DataContent::PositionDeletes, "r", 1, "q=1", 2);
        referenced.file.referenced_data_file = Some("a".into());
        let c = check(&data, &[dv, referenced], &[0]);
        assert_eq!(c, DisputeCheck::default());
    }
}
