//! The statements of typed or piped input as the shell runs them: split on `;` by the SQL
//! splitter, with clickhouse-client's `\G` as a second terminator that also asks for the Vertical
//! format (`SELECT 1\G SELECT 2;` is two statements, the first printed Vertical). A `\G` inside a
//! string or a comment is text. Also where a failing statement of a script is: its line and first
//! words, for the line under the error.

use super::history::history_text;
use crate::sql::split_statements;

/// One statement of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellStatement<'a> {
    /// Its text, without the terminator.
    pub text: &'a str,
    /// The 1-based line its text starts on.
    pub line: usize,
    /// Ended by `\G`: printed Vertical.
    pub vertical: bool,
    /// Ended by `;` or `\G` (the last statement of an input may have neither).
    pub terminated: bool,
}

/// The statements of `input`, in order (see the module comment). Borrows from `prepared`, which
/// [`prepare`] makes from the input.
pub fn statements(prepared: &Prepared) -> Vec<ShellStatement<'_>> {
    let script = prepared.text.as_str();
    split_statements(script)
        .into_iter()
        .map(|(text, line)| {
            let end = text.as_ptr() as usize - script.as_ptr() as usize + text.len();
            let rest = &script[end..];
            let blanks = rest.len() - rest.trim_start().len();
            let terminator = end + blanks;
            let terminated = rest.trim_start().starts_with(';');
            ShellStatement {
                text,
                line,
                vertical: terminated && prepared.vertical_ends.contains(&terminator),
                terminated,
            }
        })
        .collect()
}

/// Input whose `\G` terminators became `; ` (same length, so lines and offsets hold), with where
/// they were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    text: String,
    vertical_ends: Vec<usize>,
}

/// Finds the `\G` terminators of `input` (outside strings and comments, as the splitter reads
/// them) and turns each into `; `.
pub fn prepare(input: &str) -> Prepared {
    let mut text = input.to_string();
    let mut vertical_ends = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("\\G") {
        let at = from + found;
        if is_code_position(&text, at) {
            text.replace_range(at..at + 2, "; ");
            vertical_ends.push(at);
        }
        from = at + 2;
    }
    Prepared {
        text,
        vertical_ends,
    }
}

/// Whether byte `at` of `input` lies outside strings, quoted identifiers and comments: a word
/// appended there would start a statement of its own after a `;`.
fn is_code_position(input: &str, at: usize) -> bool {
    const PROBE: &str = "icetrim_probe";
    let probed = format!("{};{PROBE}", &input[..at]);
    matches!(split_statements(&probed).last(), Some((text, _)) if *text == PROBE)
}

/// Whether `input` ends with a terminator (`;` or `\G`) outside strings and comments: the shell
/// then runs it.
pub fn ends_with_terminator(input: &str) -> bool {
    let prepared = prepare(input);
    const PROBE: &str = "icetrim_probe";
    let probed = format!("{}\n{PROBE}", prepared.text);
    matches!(split_statements(&probed).last(), Some((text, _)) if *text == PROBE)
}

/// The line printed under a failing statement's error: `at line N: <first words>`, with the
/// script's name when it has one. Secrets are masked as the history masks them.
pub fn location(statement: &ShellStatement<'_>, script: Option<&str>) -> String {
    const WORDS: usize = 8;
    let masked = history_text(statement.text);
    let words: Vec<&str> = masked.split_whitespace().collect();
    let mut shown = words[..words.len().min(WORDS)].join(" ");
    if words.len() > WORDS {
        shown.push_str(" …");
    }
    match script {
        Some(name) => format!("(at line {} of {name}: {shown})", statement.line),
        None => format!("(at line {}: {shown})", statement.line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &str) -> Vec<(String, usize, bool)> {
        let prepared = prepare(input);
        statements(&prepared)
            .into_iter()
            .map(|s| (s.text.to_string(), s.line, s.vertical))
            .collect()
    }

    #[test]
    fn backslash_g_ends_a_statement_and_asks_for_vertical() {
        assert_eq!(
            split("SHOW TABLES\\G SELECT 1;\nSELECT 2 \\G\nSELECT 3"),
            [
                ("SHOW TABLES".into(), 1, true),
                ("SELECT 1".into(), 1, false),
                ("SELECT 2".into(), 2, true),
                ("SELECT 3".into(), 3, false),
            ]
        );
    }

    #[test]
    fn backslash_g_in_strings_and_comments_is_text() {
        assert_eq!(
            split("SELECT '\\G' -- \\G\n;"),
            [("SELECT '\\G' -- \\G".into(), 1, false)]
        );
        assert_eq!(
            split("/* \\G */ SELECT 1"),
            [("/* \\G */ SELECT 1".into(), 1, false)]
        );
    }

    #[test]
    fn terminators() {
        assert!(ends_with_terminator("SHOW TABLES;"));
        assert!(ends_with_terminator("SHOW TABLES\\G"));
        assert!(ends_with_terminator("SHOW TABLES \\G  "));
        assert!(ends_with_terminator("SET a = 1; SHOW TABLES;"));
        assert!(!ends_with_terminator("SHOW TABLES"));
        assert!(!ends_with_terminator("SELECT '\\G"));
        assert!(!ends_with_terminator("SET a = 'x;"));
        assert!(!ends_with_terminator("SHOW TABLES -- ;"));
        assert!(!ends_with_terminator("SHOW TABLES /* \\G */"));
    }

    #[test]
    fn locations_name_the_line_and_first_words() {
        let prepared = prepare(
            "SHOW TABLES;\n\n  ALTER TABLE nope\n  EXECUTE expire_snapshots(retain_last = 5, dry_run = 1);",
        );
        let all = statements(&prepared);
        assert_eq!(
            location(&all[1], None),
            "(at line 3: ALTER TABLE nope EXECUTE expire_snapshots(retain_last = 5, dry_run …)"
        );
        assert_eq!(
            location(&all[0], Some("a.sql")),
            "(at line 1 of a.sql: SHOW TABLES)"
        );
    }
}
