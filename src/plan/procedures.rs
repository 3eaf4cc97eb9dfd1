//! Every procedure `ALTER TABLE … EXECUTE` knows, as data: its SQL name, its parameters in
//! positional order with their declared types, and how positional arguments bind. The SQL binder
//! (`sql/bind.rs`) collects arguments against these tables and nothing else; the typed builders
//! (`engine/api.rs`, `engine/api_snapshots.rs`) take the same parameters by name. A unit test
//! below checks that each registered procedure has its grammar entry, a README row, a typed
//! builder and an `EXPLAIN` session file.
//!
//! Adding a procedure: its folder under `src/maintain/`, one entry in [`PROCEDURES`], its bind
//! function, its grammar entry and README row, its builder and an `EXPLAIN` session
//! (CONTRIBUTING.md has the checklist).

use super::snapshots::{
    CHERRYPICK_SNAPSHOT, FAST_FORWARD, PUBLISH_CHANGES, ROLLBACK_TO_SNAPSHOT,
    ROLLBACK_TO_TIMESTAMP, SET_CURRENT_SNAPSHOT,
};

/// A parameter's declared type, checked when the argument is collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A string literal.
    String,
    /// A non-negative integer literal (ClickHouse's `UInt64`).
    UInt64,
    /// An integer literal within the `Int64` range.
    Int64,
    /// Any literal: the procedure's binder validates it later, with the parameter's own message.
    Any,
}

/// One parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub ty: ParamType,
}

/// How positional arguments bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positional {
    /// ClickHouse's procedures: at most one, bound to the first parameter
    /// ("<name> accepts at most 1 positional argument(s)", `BAD_ARGUMENTS`).
    First,
    /// Spark's procedures: in parameter order, at most one per parameter
    /// ("<name> takes at most N positional argument(s), got M",
    /// `NUMBER_OF_ARGUMENTS_DOESNT_MATCH`).
    InOrder,
}

/// One procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcedureSpec {
    /// The SQL name (case-sensitive).
    pub name: &'static str,
    /// The parameters, in positional order.
    pub params: &'static [Param],
    pub positional: Positional,
}

const fn param(name: &'static str, ty: ParamType) -> Param {
    Param { name, ty }
}

use ParamType::{Any, Int64, String as Str, UInt64};

/// `expire_snapshots`.
pub const EXPIRE_SNAPSHOTS: ProcedureSpec = ProcedureSpec {
    name: "expire_snapshots",
    params: &[
        param("expire_before", Str),
        param("retention_period", Any),
        param("retain_last", Any),
        param("snapshot_ids", Any),
        param("dry_run", Any),
        param("clean_expired_metadata", Any),
    ],
    positional: Positional::First,
};

/// `remove_orphan_files`.
pub const REMOVE_ORPHAN_FILES: ProcedureSpec = ProcedureSpec {
    name: "remove_orphan_files",
    params: &[
        param("older_than", Str),
        param("location", Str),
        param("dry_run", UInt64),
        param("protect_other_tables", UInt64),
    ],
    positional: Positional::First,
};

/// `rewrite_manifests`.
pub const REWRITE_MANIFESTS: ProcedureSpec = ProcedureSpec {
    name: "rewrite_manifests",
    params: &[
        param("spec_id", UInt64),
        param("target_manifest_size_bytes", UInt64),
        param("dry_run", Any),
    ],
    positional: Positional::First,
};

/// `rewrite_data_files` (compaction; `OPTIMIZE TABLE` is its short form).
pub const REWRITE_DATA_FILES: ProcedureSpec = ProcedureSpec {
    name: "rewrite_data_files",
    params: &[
        param("where", Str),
        param("target_file_size_bytes", UInt64),
        param("min_file_size_bytes", UInt64),
        param("max_file_size_bytes", UInt64),
        param("min_input_files", UInt64),
        param("delete_file_threshold", UInt64),
        param("max_file_group_size_bytes", UInt64),
        param("max_concurrent_file_group_rewrites", UInt64),
        param("rewrite_all", Any),
        param("dry_run", Any),
    ],
    positional: Positional::First,
};

const fn snapshot_procedure(name: &'static str, params: &'static [Param]) -> ProcedureSpec {
    ProcedureSpec {
        name,
        params,
        positional: Positional::InOrder,
    }
}

/// Every procedure, in the order the README lists them.
pub const PROCEDURES: [ProcedureSpec; 10] = [
    EXPIRE_SNAPSHOTS,
    REMOVE_ORPHAN_FILES,
    REWRITE_DATA_FILES,
    REWRITE_MANIFESTS,
    snapshot_procedure(ROLLBACK_TO_SNAPSHOT, &[param("snapshot_id", Int64)]),
    snapshot_procedure(ROLLBACK_TO_TIMESTAMP, &[param("timestamp", Str)]),
    snapshot_procedure(
        SET_CURRENT_SNAPSHOT,
        &[param("snapshot_id", Int64), param("ref", Str)],
    ),
    snapshot_procedure(FAST_FORWARD, &[param("branch", Str), param("to", Str)]),
    snapshot_procedure(CHERRYPICK_SNAPSHOT, &[param("snapshot_id", Int64)]),
    snapshot_procedure(PUBLISH_CHANGES, &[param("wap_id", Str)]),
];

/// The procedure named `name`, if any.
pub fn procedure(name: &str) -> Option<&'static ProcedureSpec> {
    PROCEDURES.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn read(relative: &str) -> std::string::String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn session_files() -> Vec<std::string::String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sessions");
        let mut texts = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("tests/sessions") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "test") {
                texts.push(std::fs::read_to_string(&path).expect("session file"));
            }
        }
        texts
    }

    /// A registered procedure is reachable and documented everywhere a user looks: the grammar,
    /// the README, a typed builder of the same name, and an `EXPLAIN` in a session file.
    #[test]
    fn every_procedure_is_registered_everywhere() {
        let grammar = read("grammar/icetrim.md");
        let readme = read("README.md");
        let builders = read("src/engine/api.rs") + &read("src/engine/api_snapshots.rs");
        let sessions = session_files();
        let mut missing = Vec::new();
        for p in &PROCEDURES {
            let quoted = format!("`{}`", p.name);
            if !grammar.contains(&quoted) {
                missing.push(format!("{}: no grammar entry (grammar/icetrim.md)", p.name));
            }
            if !readme.contains(&quoted) {
                missing.push(format!("{}: no README row", p.name));
            }
            if !builders.contains(&format!("pub fn {}(", p.name)) {
                missing.push(format!("{}: no typed builder (engine/api*.rs)", p.name));
            }
            let explain = format!("EXECUTE {}(", p.name);
            let explained = sessions.iter().any(|text| {
                text.lines()
                    .any(|l| l.starts_with("EXPLAIN ALTER TABLE") && l.contains(&explain))
            });
            if !explained {
                missing.push(format!("{}: no EXPLAIN in tests/sessions/*.test", p.name));
            }
        }
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }

    #[test]
    fn names_and_parameters_are_unique() {
        for (i, p) in PROCEDURES.iter().enumerate() {
            assert_eq!(procedure(p.name), Some(p));
            assert!(PROCEDURES[..i].iter().all(|q| q.name != p.name));
            for (j, param) in p.params.iter().enumerate() {
                assert!(
                    p.params[..j].iter().all(|q| q.name != param.name),
                    "{}: {} twice",
                    p.name,
                    param.name
                );
            }
        }
        assert_eq!(procedure("nope"), None);
    }
}
