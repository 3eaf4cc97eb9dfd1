//! SQL sessions as a user would type them, one topic per file under `tests/sessions/`, run through
//! the embedding API exactly as the shell runs them.
//!
//! File format (sqllogictest-like):
//!
//! ```text
//! # a comment
//! fixture <scenario> [orphans]   -- build a fixture table (scripts/fixtures); ${TABLE} is its folder
//! statement ok                   -- the SQL below (up to a blank line) must succeed
//! statement error <code> [text]  -- it must fail with ClickHouse code <code> and a message holding text
//! query                          -- its rows, as TabSeparated, must equal the lines after `----`
//! query rowsort                  -- the same, comparing sorted lines
//! oracle clean                   -- pyiceberg reads the table and finds every referenced file
//! ```
//!
//! In SQL and expected rows, `${TABLE}` is the fixture's folder, `${snapshot:<label>}` a snapshot id
//! and `${data_file:<label>}` a data file path of the fixture. The clock is fixed at the time the
//! fixture was built for.

#[path = "common/fixtures.rs"]
mod fixtures;

use std::path::Path;

use icetrim::clock::FixedClock;
use icetrim::engine::{Engine, Session};
use icetrim::format::OutputFormat;

struct Runner {
    session: Session,
    fixture: Option<fixtures::Fixture>,
    file: String,
}

impl Runner {
    fn substitute(&self, text: &str) -> String {
        let Some(fx) = &self.fixture else {
            return text.to_string();
        };
        let mut out = text.replace("${TABLE}", &fx.table_dir().display().to_string());
        while let Some(start) = out.find("${") {
            let Some(len) = out[start..].find('}') else {
                break;
            };
            let key = &out[start + 2..start + len];
            let value = match key.split_once(':') {
                Some(("snapshot", label)) => fx.snapshot_id(label).to_string(),
                Some(("data_file", label)) => fx.data_file(label).display().to_string(),
                _ => panic!("{}: unknown variable ${{{key}}}", self.file),
            };
            out.replace_range(start..start + len + 1, &value);
        }
        out
    }

    async fn run_block(&mut self, header: &str, body: &[&str], line: usize) {
        let at = format!("{}:{line}", self.file);
        let (sql_lines, expected): (Vec<&str>, Vec<&str>) =
            match body.iter().position(|l| *l == "----") {
                Some(i) => (body[..i].to_vec(), body[i + 1..].to_vec()),
                None => (body.to_vec(), Vec::new()),
            };
        let sql = self.substitute(&sql_lines.join("\n"));
        let words: Vec<&str> = header.split_whitespace().collect();
        match words.as_slice() {
            ["statement", "ok"] => {
                if let Err(e) = self.session.execute(&sql).await {
                    panic!("{at}: expected success, got {e}\n{sql}");
                }
            }
            ["statement", "error", code, rest @ ..] => {
                let text = rest.join(" ");
                match self.session.execute(&sql).await {
                    Ok(_) => panic!("{at}: expected error {code}, got success\n{sql}"),
                    Err(e) => {
                        assert_eq!(e.code().to_string(), *code, "{at}: wrong code for {e}");
                        let text = self.substitute(&text);
                        assert!(
                            e.message().contains(&text),
                            "{at}: message {:?} lacks {text:?}",
                            e.message()
                        );
                    }
                }
            }
            ["query", mode @ ..] => {
                let results = match self.session.execute(&sql).await {
                    Ok(r) => r,
                    Err(e) => panic!("{at}: query failed: {e}\n{sql}"),
                };
                let last = results.last().unwrap_or_else(|| panic!("{at}: no result"));
                let text = OutputFormat::TabSeparated.render(&last.columns, &last.rows, 0.0);
                let mut got: Vec<String> = text.lines().map(str::to_string).collect();
                let mut want: Vec<String> = expected.iter().map(|l| self.substitute(l)).collect();
                if mode.first() == Some(&"rowsort") {
                    got.sort();
                    want.sort();
                }
                assert_eq!(got, want, "{at}: rows differ for\n{sql}");
            }
            ["fixture", scenario, flags @ ..] => {
                let now = fixtures::now_ms();
                let fx = fixtures::make_fixture(scenario, now, flags.contains(&"orphans"));
                let engine = Engine::builder()
                    .clock(FixedClock::new(now))
                    .build()
                    .expect("engine");
                self.session = engine.session();
                self.fixture = Some(fx);
            }
            ["oracle", "clean"] => {
                let fx = self
                    .fixture
                    .as_ref()
                    .unwrap_or_else(|| panic!("{at}: no fixture"));
                let newest = newest_metadata(&fx.table_dir());
                let report = fixtures::oracle_inspect(&newest);
                assert_eq!(
                    report["missing"],
                    serde_json::json!([]),
                    "{at}: files missing after the session"
                );
            }
            _ => panic!("{at}: unknown directive {header:?}"),
        }
    }
}

/// The metadata file with the highest version in the table's `metadata/` folder.
fn newest_metadata(table: &Path) -> std::path::PathBuf {
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    for entry in std::fs::read_dir(table.join("metadata")).expect("metadata dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if !name.ends_with(".metadata.json") {
            continue;
        }
        let digits: String = name
            .trim_start_matches('v')
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let Ok(version) = digits.parse::<u64>() else {
            continue;
        };
        if best.as_ref().is_none_or(|(v, _)| version > *v) {
            best = Some((version, path));
        }
    }
    best.map(|(_, p)| p).expect("a metadata file")
}

async fn run_file(name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sessions")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let engine = Engine::builder().build().expect("engine");
    let mut runner = Runner {
        session: engine.session(),
        fixture: None,
        file: name.to_string(),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut end = i + 1;
        while end < lines.len() && !lines[end].trim().is_empty() {
            end += 1;
        }
        let body: Vec<&str> = lines[i + 1..end].to_vec();
        runner.run_block(line, &body, start).await;
        i = end;
    }
}

macro_rules! sessions {
    ($($test:ident => $file:literal),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                run_file($file).await;
            }
        )*
    };
}

sessions! {
    tables_and_settings => "tables_and_settings.test",
    argument_errors => "argument_errors.test",
    introspection => "introspection.test",
    expire_branches_tags => "expire_branches_tags.test",
    orphans_strays => "orphans_strays.test",
}
