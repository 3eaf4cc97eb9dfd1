//! Tab completion in the interactive shell: keywords, output formats, procedure names and their
//! argument names (from the procedure registry), and the names the session knows (databases,
//! tables, `system` tables and their columns, settings; [`Session::known_names`], refreshed before
//! each prompt). `db.` completes the tables of `db`, `system.` the system tables, `table.` the
//! columns of a system table. A word without a qualifier completes only once a letter is typed.
//! Inside a procedure's parentheses only that procedure's arguments are offered.
//!
//! [`Session::known_names`]: crate::engine::Session::known_names

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use crate::engine::KnownNames;
use crate::format::OutputFormat;
use crate::plan::procedures::PROCEDURES;

/// The SQL words icetrim's statements use, upper case.
const KEYWORDS: &[&str] = &[
    "ALTER",
    "AND",
    "AS",
    "ASC",
    "BRANCH",
    "BY",
    "CALL",
    "CREATE",
    "DATABASE",
    "DATABASES",
    "DESC",
    "DROP",
    "ENGINE",
    "EXECUTE",
    "EXISTS",
    "EXPLAIN",
    "FINAL",
    "FOR",
    "FORMAT",
    "FROM",
    "GRANT",
    "GRANTS",
    "IF",
    "IN",
    "LIMIT",
    "MANIFEST",
    "NOT",
    "ON",
    "OPTIMIZE",
    "OPTION",
    "OR",
    "ORDER",
    "REPLACE",
    "RETAIN",
    "REVOKE",
    "SELECT",
    "SET",
    "SETTINGS",
    "SHOW",
    "SYSTEM",
    "TABLE",
    "TABLES",
    "TAG",
    "TBLPROPERTIES",
    "TO",
    "UNSET",
    "USE",
    "USER",
    "USERS",
    "WHERE",
    "WITH",
    "IcebergLocal",
    "IcebergS3",
    "IcebergAzure",
    "DataLakeCatalog",
];

/// The rustyline helper of the shell: completion only.
#[derive(Debug, Default)]
pub struct ShellHelper {
    names: KnownNames,
}

impl ShellHelper {
    /// Complete from `names` from now on.
    pub fn set_names(&mut self, names: KnownNames) {
        self.names = names;
    }
}

/// Where the word under the cursor starts in `line` (`pos`: the cursor) and its candidates.
pub fn complete(names: &KnownNames, line: &str, pos: usize) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let word_start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
        .last()
        .map_or(pos, |(i, _)| i);
    let word = &before[word_start..];
    if let Some((qualifier, prefix)) = word.rsplit_once('.') {
        let start = pos - prefix.len();
        return (start, matching(qualified(names, qualifier), prefix));
    }
    if word.is_empty() {
        return (pos, Vec::new());
    }
    (word_start, matching(unqualified(names, before, line), word))
}

/// What follows `qualifier.`: tables of a database, system tables, or a system table's columns.
fn qualified(names: &KnownNames, qualifier: &str) -> Vec<String> {
    let qualifier = qualifier.trim_matches('`');
    if qualifier.eq_ignore_ascii_case("system") {
        return names
            .system_tables
            .iter()
            .map(|(t, _)| t.to_string())
            .collect();
    }
    let mut found: Vec<String> = names
        .tables
        .iter()
        .filter(|(db, _)| db == qualifier)
        .map(|(_, t)| t.clone())
        .collect();
    if let Some((_, columns)) = names.system_tables.iter().find(|(t, _)| *t == qualifier) {
        found.extend(columns.iter().cloned());
    }
    found
}

/// Every name a bare word may be: inside a procedure's parentheses its arguments only; elsewhere
/// keywords, formats, procedures, arguments, databases, tables, system tables' columns (of the
/// system table the line names, else all) and settings.
fn unqualified(names: &KnownNames, before: &str, line: &str) -> Vec<String> {
    if let Some(procedure) = open_procedure(before) {
        return procedure
            .params
            .iter()
            .map(|p| p.name.to_string())
            .collect();
    }
    let mut all: Vec<String> = KEYWORDS.iter().map(|k| k.to_string()).collect();
    all.extend(OutputFormat::ALL.iter().map(|(_, n)| n.to_string()));
    all.extend(PROCEDURES.iter().map(|p| p.name.to_string()));
    all.extend(
        PROCEDURES
            .iter()
            .flat_map(|p| p.params.iter().map(|a| a.name.to_string())),
    );
    all.extend(names.databases.iter().cloned());
    all.extend(names.tables.iter().map(|(_, t)| t.clone()));
    all.push("system".to_string());
    let named: Vec<&(&str, Vec<String>)> = names
        .system_tables
        .iter()
        .filter(|(t, _)| line.contains(t))
        .collect();
    let system_tables: Vec<&(&str, Vec<String>)> = if named.is_empty() {
        names.system_tables.iter().collect()
    } else {
        named
    };
    for (_, columns) in system_tables {
        all.extend(columns.iter().cloned());
    }
    all.extend(names.settings.iter().map(|s| s.to_string()));
    all
}

/// The procedure whose argument list the cursor is in (`name(` before it, not yet closed).
fn open_procedure(before: &str) -> Option<&'static crate::plan::procedures::ProcedureSpec> {
    let open = before.rfind('(')?;
    if before[open..].contains(')') {
        return None;
    }
    let head = before[..open].trim_end();
    let name_start = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &head[name_start..];
    PROCEDURES
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The candidates starting with `prefix` (ignoring case), sorted, each once; a keyword typed in
/// lower case is offered in lower case.
fn matching(candidates: Vec<String>, prefix: &str) -> Vec<String> {
    let lower = prefix.chars().all(|c| !c.is_ascii_uppercase());
    let mut found: Vec<String> = candidates
        .into_iter()
        .filter(|c| {
            c.len() >= prefix.len()
                && c.is_char_boundary(prefix.len())
                && c[..prefix.len()].eq_ignore_ascii_case(prefix)
        })
        .map(|c| {
            let keyword = KEYWORDS.contains(&c.as_str()) && c.chars().all(|x| !x.is_lowercase());
            if lower && keyword {
                c.to_ascii_lowercase()
            } else {
                c
            }
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = complete(&self.names, line, pos);
        let pairs = found
            .into_iter()
            .map(|name| Pair {
                display: name.clone(),
                replacement: name,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> KnownNames {
        KnownNames {
            databases: vec!["default".into(), "lake".into()],
            tables: vec![
                ("default".into(), "events".into()),
                ("lake".into(), "orders".into()),
            ],
            system_tables: vec![
                (
                    "iceberg_refs",
                    vec!["database".into(), "max_ref_age_ms".into()],
                ),
                (
                    "iceberg_snapshots",
                    vec!["snapshot_id".into(), "manifest_list".into()],
                ),
            ],
            settings: vec!["session_timezone", "iceberg_delete_concurrency"],
        }
    }

    fn at_end(line: &str) -> (usize, Vec<String>) {
        complete(&names(), line, line.len())
    }

    #[test]
    fn keywords_keep_the_typed_case() {
        assert_eq!(at_end("sel"), (0, vec!["select".to_string()]));
        assert_eq!(
            at_end("SHOW TAB"),
            (
                5,
                ["TABLE", "TABLES", "TabSeparated", "TabSeparatedWithNames"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(at_end("EXPL").1, ["EXPLAIN"]);
    }

    #[test]
    fn procedures_and_their_arguments() {
        assert_eq!(
            at_end("ALTER TABLE events EXECUTE expire_s").1,
            ["expire_snapshots"]
        );
        let (start, found) = at_end("ALTER TABLE events EXECUTE expire_snapshots(ret");
        assert_eq!(start, "ALTER TABLE events EXECUTE expire_snapshots(".len());
        assert_eq!(found, ["retain_last", "retention_period"]);
        let found = at_end("ALTER TABLE t EXECUTE remove_orphan_files(o").1;
        assert_eq!(found, ["older_than"], "only this procedure's arguments");
        assert!(
            at_end("ALTER TABLE t EXECUTE expire_snapshots(o")
                .1
                .is_empty()
        );
    }

    #[test]
    fn databases_tables_system_tables_columns_settings() {
        assert_eq!(at_end("USE la").1, ["lake"]);
        assert_eq!(at_end("ALTER TABLE ev").1, ["events"]);
        assert_eq!(at_end("SHOW CREATE TABLE lake.").1, ["orders"]);
        assert_eq!(
            at_end("SELECT * FROM system.iceberg_").1,
            ["iceberg_refs", "iceberg_snapshots"]
        );
        assert_eq!(
            at_end("SELECT snap").1,
            ["snapshot_id", "snapshot_ids"],
            "columns of every system table (and an argument name)"
        );
        let found = at_end("SELECT ma").1;
        for name in [
            "manifest_list",
            "max_ref_age_ms",
            "max_file_size_bytes",
            "Markdown",
        ] {
            assert!(found.contains(&name.to_string()), "{name}: {found:?}");
        }
        let line = "SELECT ma FROM system.iceberg_refs";
        let found = complete(&names(), line, 9).1;
        assert!(found.contains(&"max_ref_age_ms".to_string()), "{found:?}");
        assert!(
            !found.contains(&"manifest_list".to_string()),
            "only the named system table's columns: {found:?}"
        );
        assert_eq!(at_end("SET session_t").1, ["session_timezone"]);
        assert_eq!(
            at_end("SELECT * FROM system.iceberg_refs FORMAT Pretty").1,
            ["Pretty", "PrettyCompact"]
        );
    }

    #[test]
    fn nothing_for_an_empty_word() {
        assert!(at_end("").1.is_empty());
        assert!(at_end("SHOW ").1.is_empty());
    }
}
