//! Keeps `grammar/icetrim.md` and the parser in step: every statement of every ` ```sql ` block
//! parses and round-trips; every statement of every ` ```sql-refused ` block fails.

use icetrim::internals::sql::{parse_statement_at, split_statements};

const GRAMMAR: &str = include_str!("../../grammar/icetrim.md");

/// The fenced blocks whose info string is exactly `tag`.
fn blocks(tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in GRAMMAR.lines() {
        match &mut current {
            None if line.trim_start().strip_prefix("```") == Some(tag) => {
                current = Some(String::new());
            }
            Some(text) if line.trim_start().starts_with("```") => {
                found.push(std::mem::take(text));
                current = None;
            }
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    found
}

#[test]
fn every_example_parses_and_round_trips() {
    let examples = blocks("sql");
    assert!(examples.len() >= 4, "grammar lost its examples");
    let mut count = 0;
    for block in examples {
        for (text, line) in split_statements(&block) {
            let statement = parse_statement_at(text, line)
                .unwrap_or_else(|e| panic!("grammar example {text:?}: {e}"));
            let printed = statement.to_string();
            let again = parse_statement_at(&printed, 1)
                .unwrap_or_else(|e| panic!("canonical {printed:?}: {e}"));
            assert_eq!(again, statement, "{printed}");
            count += 1;
        }
    }
    assert!(count >= 20, "only {count} examples");
}

#[test]
fn every_refused_example_fails() {
    let refused = blocks("sql-refused");
    assert!(!refused.is_empty());
    for block in refused {
        for (text, line) in split_statements(&block) {
            assert!(
                parse_statement_at(text, line).is_err(),
                "grammar says {text:?} is refused, but it parses"
            );
        }
    }
}
