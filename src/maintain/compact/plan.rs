//! The compaction plan (pure): which data files are rewritten, in which groups, with which delete
//! files, and how many files each group is expected to write. Iceberg Java's bin-pack strategy
//! (`SizeBasedFileRewriter` / `BinPackRewriteFilePlanner`, 1.9):
//!
//! 1. Options resolve against the table: `target` = `target_file_size_bytes`, else the property
//!    `write.target-file-size-bytes`, else 512 MiB; `min` = 0.75 × target; `max` = 1.8 × target;
//!    `min_input_files` = 5; `delete_file_threshold` = unlimited (`OPTIMIZE TABLE`: 1);
//!    `max_file_group_size_bytes` = 100 GiB; `max_concurrent_file_group_rewrites` = 5.
//!    `min < target < max` or `BAD_ARGUMENTS`.
//! 2. A data file is selected when `rewrite_all`, or its size is `< min` or `> max`, or at least
//!    `delete_file_threshold` delete files apply to it; and the `where` filter may match its
//!    partition.
//! 3. Selected files are grouped by `(spec, partition)` and packed, in path order, into groups of
//!    at most `max_file_group_size_bytes` (Java's `ListPacker` with lookback 1).
//! 4. A group is rewritten when `rewrite_all`, or it has more than one file and at least
//!    `min_input_files`, or more than one file and more bytes than `target`, or more bytes than
//!    `max`, or a file with at least `delete_file_threshold` deletes.
//! 5. Memory: a group's delete files must fit the share of `iceberg_compaction_max_memory_bytes`
//!    a group gets for them (`memory.rs`, [`Resolved::delete_memory`]). A bin whose inputs' delete
//!    files would need more is split, in path order, into groups that fit (each then judged by
//!    rule 4 on its own); a single file whose delete files alone need more is not rewritten, and
//!    the reason says so.
//! 6. Expected output files (Java's `numOutputFiles`): 1 below `target`; else `ceil(size/target)`
//!    when the remainder is above `min`, else `floor(size/target)` when that average stays under
//!    `min(1.1 × target, write_max)`, else `ceil`. Writers roll at
//!    `write_max = target + 0.5 × (max − target)`.
//! 7. Output files go to the default spec (Java's `RewriteDataFiles`). Files are grouped by the
//!    partition their rows take under the default spec: a file of the default spec by its own
//!    partition; a file of an older spec whose partition tuple decides the new one (the new
//!    fields are the same transforms of the same columns, coarser time transforms of them,
//!    transforms of an identity field, or `void`; or the default spec is unpartitioned) joins
//!    the group of that partition; the other files of older specs (Java's "incompatible spec"
//!    tasks) are grouped together, as Java does, bin-packed like any partition, and their rows
//!    are split by the partition each row takes under the default spec (`repartition.rs`).
//!    A default spec icetrim cannot compute (an unknown transform) leaves those files, and
//!    EXPLAIN says why.

use std::collections::BTreeMap;

use super::deletes::applicable;
use super::memory::deletes_estimate;
use super::model::{LiveFile, partition_text};
use crate::error::{Error, Result};
use crate::iceberg::manifest::PartitionTuple;
use crate::plan::CompactOptions;

/// 512 MiB: Java's `write.target-file-size-bytes` default.
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 512 * 1024 * 1024;
/// 100 GiB: Java's `max-file-group-size-bytes` default.
pub const DEFAULT_MAX_GROUP_SIZE: u64 = 100 * 1024 * 1024 * 1024;

/// The options with every default filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub target: u64,
    pub min: u64,
    pub max: u64,
    pub min_input_files: u64,
    /// `u64::MAX`: unlimited.
    pub delete_file_threshold: u64,
    pub rewrite_all: bool,
    pub max_group_size: u64,
    pub max_concurrent: u64,
    /// Memory the delete files of one group may take (`memory.rs`); `u64::MAX`: unbounded.
    pub delete_memory: u64,
}

impl Resolved {
    /// Resolve `options` against the table property `write.target-file-size-bytes`.
    pub fn new(options: &CompactOptions, target_property: Option<&str>) -> Result<Resolved> {
        let target = match (options.target_file_size_bytes, target_property) {
            (Some(t), _) => t,
            (None, Some(text)) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|t| *t > 0)
                .ok_or_else(|| {
                    Error::bad_arguments(format!(
                        "table property 'write.target-file-size-bytes' is not a positive \
                         integer: '{text}'"
                    ))
                })?,
            (None, None) => DEFAULT_TARGET_FILE_SIZE,
        };
        let min = options
            .min_file_size_bytes
            .unwrap_or((target as f64 * 0.75) as u64);
        let max = options
            .max_file_size_bytes
            .unwrap_or((target as f64 * 1.8) as u64);
        if min >= target || max <= target {
            return Err(Error::bad_arguments(format!(
                "rewrite_data_files needs min_file_size_bytes ({min}) < target_file_size_bytes \
                 ({target}) < max_file_size_bytes ({max})"
            )));
        }
        Ok(Resolved {
            target,
            min,
            max,
            min_input_files: options.min_input_files.unwrap_or(5),
            delete_file_threshold: options.delete_file_threshold.unwrap_or(u64::MAX),
            rewrite_all: options.rewrite_all,
            max_group_size: options
                .max_file_group_size_bytes
                .unwrap_or(DEFAULT_MAX_GROUP_SIZE),
            max_concurrent: options.max_concurrent_file_group_rewrites.unwrap_or(5),
            delete_memory: u64::MAX,
        })
    }

    /// Where writers roll to a new file: `target + 0.5 × (max − target)`.
    pub fn write_max_file_size(&self) -> u64 {
        self.target + (self.max - self.target) / 2
    }

    /// Java's `numOutputFiles`.
    pub fn expected_outputs(&self, input_size: u64) -> u64 {
        if input_size < self.target {
            return 1;
        }
        let with_remainder = input_size.div_ceil(self.target);
        let without = input_size / self.target;
        let avg_without = input_size / without;
        let cap = (1.1 * self.target as f64).min(self.write_max_file_size() as f64);
        if input_size % self.target > self.min {
            with_remainder
        } else if (avg_without as f64) < cap {
            without
        } else {
            with_remainder
        }
    }
}

/// Where the rows of a data file go under the default spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// Every row into this partition tuple of the default spec.
    Partition(PartitionTuple),
    /// Each row into the partition its values take under the default spec.
    Split,
    /// The file cannot be rewritten into the default spec: why.
    Blocked(String),
}

/// Where a group's output rows go.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// One partition tuple of the default spec.
    Partition(PartitionTuple),
    /// Split row by row by the default spec.
    Split,
}

/// One file group: data files rewritten together into one partition of the default spec (or
/// split by it).
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Position in [`Plan::groups`].
    pub index: usize,
    /// The default spec; for a group that cannot be rewritten, its files' spec.
    pub spec_id: i32,
    /// The output partition as text (`name=value/...`), or `*` when rows are split.
    pub partition: String,
    pub output: Output,
    /// Indexes into the data files.
    pub inputs: Vec<usize>,
    /// Indexes into the delete files that apply to at least one input.
    pub deletes: Vec<usize>,
    pub input_bytes: u64,
    pub input_records: u64,
    pub expected_outputs: u64,
    /// Why it is rewritten, or (when `rewrite` is false) why not.
    pub reason: String,
    pub rewrite: bool,
    /// Not rewritten because its delete files need more memory than a group may take.
    pub over_memory: bool,
}

/// The plan over the starting snapshot.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub groups: Vec<Group>,
}

impl Plan {
    /// Groups that will be rewritten.
    pub fn rewritten(&self) -> impl Iterator<Item = &Group> {
        self.groups.iter().filter(|g| g.rewrite)
    }
}

/// A selected data file (index) and the delete files (indexes) that apply to it.
type Selected = (usize, Vec<usize>);

/// How files group: by output partition, split, or (blocked) by their own spec and partition and
/// the reason they are left.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Partition(String),
    Split,
    Blocked(i32, String, String),
}

/// The placement of files when the default spec is `default` (id, unpartitioned) and files of
/// other specs cannot be placed: files of the default spec keep their partition, every file goes
/// to the one partition of an unpartitioned default spec, the others are blocked.
pub fn by_spec(default: (i32, bool)) -> impl Fn(&LiveFile) -> Place {
    move |f: &LiveFile| {
        if f.spec_id == default.0 {
            Place::Partition(f.file.partition.clone())
        } else if default.1 {
            Place::Partition(PartitionTuple::default())
        } else {
            Place::Blocked(format!(
                "spec {} is not the default spec {}",
                f.spec_id, default.0
            ))
        }
    }
}

/// Whether data file `f`, to which `applying` delete files apply, is selected for rewriting (rule
/// 2, the `where` filter apart).
fn selected(f: &LiveFile, applying: usize, options: &Resolved) -> bool {
    let size = f.file.file_size_in_bytes.max(0) as u64;
    options.rewrite_all
        || size < options.min
        || size > options.max
        || applying as u64 >= options.delete_file_threshold
}

/// The data files (indexes) [`plan`] may put in a group: those the `where` filter may match and
/// rule 2 selects.
pub fn candidates(
    data: &[LiveFile],
    deletes: &[LiveFile],
    options: &Resolved,
    selected_by_filter: impl Fn(&LiveFile) -> bool,
) -> Vec<usize> {
    (0..data.len())
        .filter(|i| {
            let f = &data[*i];
            selected_by_filter(f) && selected(f, applicable(deletes, f).len(), options)
        })
        .collect()
}

/// Plans the compaction of `data` (live data files) with `deletes` (live delete files).
/// `selected_by_filter`: whether the `where` filter may match a file. `default_spec`: the
/// table's default spec id. `place`: where a file's rows go under the default spec.
pub fn plan(
    data: &[LiveFile],
    deletes: &[LiveFile],
    options: &Resolved,
    selected_by_filter: impl Fn(&LiveFile) -> bool,
    default_spec: i32,
    place: impl Fn(&LiveFile) -> Place,
) -> Plan {
    let mut by_partition: BTreeMap<Key, (Place, Vec<Selected>)> = BTreeMap::new();
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.sort_by(|a, b| data[*a].path().cmp(data[*b].path()));
    for i in order {
        let f = &data[i];
        if !selected_by_filter(f) {
            continue;
        }
        let applying = applicable(deletes, f);
        if selected(f, applying.len(), options) {
            let placed = place(f);
            let key = match &placed {
                // A file of the default spec already carries its partition's text.
                Place::Partition(_) if f.spec_id == default_spec => {
                    Key::Partition(f.partition.clone())
                }
                Place::Partition(v) => Key::Partition(partition_text(v)),
                Place::Split => Key::Split,
                Place::Blocked(why) => Key::Blocked(f.spec_id, f.partition.clone(), why.clone()),
            };
            by_partition
                .entry(key)
                .or_insert_with(|| (placed, Vec::new()))
                .1
                .push((i, applying));
        }
    }
    let mut groups = Vec::new();
    for (key, (placed, files)) in by_partition {
        let mut bins: Vec<Vec<Selected>> = Vec::new();
        let mut open_size = 0u64;
        for (i, applying) in files {
            let size = data[i].file.file_size_in_bytes.max(0) as u64;
            match bins.last_mut() {
                Some(bin) if open_size.saturating_add(size) <= options.max_group_size => {
                    bin.push((i, applying));
                    open_size += size;
                }
                _ => {
                    bins.push(vec![(i, applying)]);
                    open_size = size;
                }
            }
        }
        let (spec_id, partition, output, blocked) = match (&key, placed) {
            (Key::Blocked(spec, p, _), Place::Blocked(why)) => {
                (*spec, p.clone(), Output::Split, Some(why))
            }
            (Key::Partition(text), Place::Partition(v)) => {
                (default_spec, text.clone(), Output::Partition(v), None)
            }
            _ => (default_spec, "*".to_string(), Output::Split, None),
        };
        for bin in bins
            .into_iter()
            .flat_map(|b| split_by_memory(b, deletes, options))
        {
            let index = groups.len();
            let mut g = group(
                index,
                data,
                deletes,
                (spec_id, &partition),
                bin,
                options,
                default_spec,
            );
            g.output = output.clone();
            // A blocked group says why it is left (unless its delete files' memory is the reason).
            if let Some(why) = &blocked {
                if !g.over_memory {
                    g.reason = why.clone();
                }
                g.rewrite = false;
            }
            groups.push(g);
        }
    }
    Plan { groups }
}

/// Splits `bin` (in its order) into runs whose delete files fit `options.delete_memory`; a file
/// whose delete files alone do not fit stays alone (and is not rewritten: see [`group`]).
fn split_by_memory(
    bin: Vec<Selected>,
    deletes: &[LiveFile],
    options: &Resolved,
) -> Vec<Vec<Selected>> {
    let estimate =
        |ds: &std::collections::BTreeSet<usize>| deletes_estimate(ds.iter().map(|d| &deletes[*d]));
    let mut out: Vec<Vec<Selected>> = Vec::new();
    let mut open: Vec<Selected> = Vec::new();
    let mut open_deletes = std::collections::BTreeSet::new();
    for (i, applying) in bin {
        let mut with = open_deletes.clone();
        with.extend(applying.iter().copied());
        if !open.is_empty() && estimate(&with) > options.delete_memory {
            out.push(std::mem::take(&mut open));
            with = applying.iter().copied().collect();
        }
        open.push((i, applying));
        open_deletes = with;
    }
    if !open.is_empty() {
        out.push(open);
    }
    out
}

fn group(
    index: usize,
    data: &[LiveFile],
    all_deletes: &[LiveFile],
    (spec_id, partition): (i32, &str),
    bin: Vec<Selected>,
    options: &Resolved,
    default_spec: i32,
) -> Group {
    let input_bytes: u64 = bin
        .iter()
        .map(|(i, _)| data[*i].file.file_size_in_bytes.max(0) as u64)
        .sum();
    let input_records: u64 = bin
        .iter()
        .map(|(i, _)| data[*i].file.record_count.max(0) as u64)
        .sum();
    let many_deletes = bin
        .iter()
        .any(|(_, d)| d.len() as u64 >= options.delete_file_threshold);
    let mut deletes: Vec<usize> = bin.iter().flat_map(|(_, d)| d.iter().copied()).collect();
    deletes.sort_unstable();
    deletes.dedup();
    let n = bin.len() as u64;
    let delete_bytes = deletes_estimate(deletes.iter().map(|d| &all_deletes[*d]));
    let reason = if delete_bytes > options.delete_memory {
        None
    } else if options.rewrite_all {
        Some("rewrite_all")
    } else if n > 1 && n >= options.min_input_files {
        Some("enough input files")
    } else if n > 1 && input_bytes > options.target {
        Some("enough content")
    } else if input_bytes > options.max {
        Some("too much content")
    } else if many_deletes {
        Some("delete files")
    } else {
        None
    };
    let mut old_specs: Vec<i32> = bin
        .iter()
        .map(|(i, _)| data[*i].spec_id)
        .filter(|s| *s != default_spec)
        .collect();
    old_specs.sort_unstable();
    old_specs.dedup();
    let (rewrite, reason) = match reason {
        Some(r) if old_specs.is_empty() => (true, r.to_string()),
        Some(r) => (
            true,
            format!(
                "{r}; rows of spec {} re-partitioned onto the default spec {default_spec}",
                old_specs
                    .iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        None if delete_bytes > options.delete_memory => (
            false,
            format!(
                "its delete files need about {delete_bytes} bytes of memory, more than the \
                 {} a file group may give them under iceberg_compaction_max_memory_bytes",
                options.delete_memory
            ),
        ),
        None => (
            false,
            format!(
                "too few files ({n} < min_input_files {}) and too little content",
                options.min_input_files
            ),
        ),
    };
    Group {
        index,
        spec_id,
        partition: partition.to_string(),
        output: Output::Split,
        inputs: bin.iter().map(|(i, _)| *i).collect(),
        deletes,
        input_bytes,
        input_records,
        expected_outputs: options.expected_outputs(input_bytes),
        reason,
        rewrite,
        over_memory: delete_bytes > options.delete_memory,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
