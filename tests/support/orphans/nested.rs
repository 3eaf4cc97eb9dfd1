//! Tables inside one another's locations, built by real pyiceberg with
//! `tests/py/make_nested_tables.py` (its module comment describes the layout: `d` at the root,
//! `a` at `root/a`, `b` at `a/nested_b`, `b2` at `a/data/b`, `c` at `a/tables/c` writing its data
//! into `a/data/`, planted strays, every mtime ten days old).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The built tables and their facts.
pub struct Nested {
    pub dir: tempfile::TempDir,
    pub facts: Value,
}

fn run(args: &[&str]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/make_nested_tables.py");
    crate::support::fixtures::run_python_json(&script, args)
}

impl Nested {
    /// Builds the tables in a fresh temporary folder.
    pub fn build() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("icetrim-nested-")
            .tempdir()
            .expect("temporary folder");
        let root = dir.path().join("root");
        let facts = run(&["build", root.to_str().expect("UTF-8 path")]);
        Nested { dir, facts }
    }

    /// The root (table `d`'s location).
    pub fn root(&self) -> PathBuf {
        PathBuf::from(self.facts["root"].as_str().expect("root"))
    }

    /// Location of table `name` (`a`, `b`, `b2`, `c`, `d`).
    pub fn location(&self, name: &str) -> PathBuf {
        PathBuf::from(
            self.facts["tables"][name]["location"]
                .as_str()
                .unwrap_or_else(|| panic!("no table {name}")),
        )
    }

    /// The planted stray `name`.
    pub fn stray(&self, name: &str) -> PathBuf {
        PathBuf::from(
            self.facts["strays"][name]
                .as_str()
                .unwrap_or_else(|| panic!("no stray {name}")),
        )
    }

    /// Table name → (newest metadata file, rows pyiceberg should read).
    pub fn expected_rows(&self) -> BTreeMap<String, i64> {
        let tables = self.facts["tables"].as_object().expect("tables");
        tables
            .values()
            .map(|t| {
                (
                    t["metadata_path"]
                        .as_str()
                        .expect("metadata_path")
                        .to_string(),
                    t["rows"].as_i64().expect("rows"),
                )
            })
            .collect()
    }

    /// What pyiceberg reads now from every table's newest metadata file (a full scan, so every
    /// data file of the current snapshots must be there).
    pub fn read_rows(&self) -> BTreeMap<String, i64> {
        let expected = self.expected_rows();
        let mut args = vec!["read"];
        args.extend(expected.keys().map(String::as_str));
        let out = run(&args);
        out.as_object()
            .expect("rows")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().expect("row count")))
            .collect()
    }

    /// Panics unless pyiceberg reads every table with the rows it was built with.
    pub fn assert_all_readable(&self) {
        assert_eq!(self.read_rows(), self.expected_rows());
    }
}

/// Every file under `dir`, recursively.
pub fn all_files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            if entry.file_type().expect("file type").is_dir() {
                stack.push(path);
            } else {
                out.insert(path);
            }
        }
    }
    out
}
