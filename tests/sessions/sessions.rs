//! SQL sessions as a user would type them, one topic per file under `tests/sessions/`, run through
//! the embedding API exactly as the shell runs them, on the local disk and on the S3 and Azure
//! emulators.
//!
//! File format (sqllogictest-like; a block is a directive line and the lines under it up to a
//! blank line; `#` lines are comments):
//!
//! ```text
//! backends local s3 azure rest glue -- first line: where the file runs (default: local)
//! fixture <scenario> [orphans]   -- a fixture table (scripts/fixtures); a fresh engine whose clock
//!                                   stands at the time the fixture was built for
//! statement ok                   -- the SQL below must succeed
//! statement error <code> [text]  -- it must fail with ClickHouse code <code>, message holding text
//! query [rowsort]                -- its rows, as TabSeparated, equal the lines after `----`
//! oracle clean                   -- pyiceberg reads the table: every referenced file is there
//! file exists <path>             -- the file is there (`file gone <path>`: it is not)
//! files remember                 -- note every file of the table, with its size ...
//! files unchanged                -- ... and check nothing was written or deleted since
//! files kept                     -- ... or only that nothing was deleted or changed since
//! warning <text>                -- a warning of the last statement holds <text>
//! between plan and commit        -- the SQL below runs (in another session) right before the next
//!                                   statement's first commit attempt: another writer's commit
//!                                   lands between that statement's plan and its commit
//! stray <relative path> <age>    -- (local only) a stray file whose mtime is <age> (e.g. 2d) ago
//! copy table to <name>           -- (local only) a copy of the table folder, `${TABLE_PARENT}/<name>`
//! user <name>                    -- the statements that follow run as user <name> (the same
//!                                   session: database and settings stay; `user default` goes back)
//! clickhouse [rowsort]           -- (local pass only) the SQL below on ClickHouse (chdb), on a
//!                                   twin of the fixture, attached as `t`; rows after `----`
//! ```
//!
//! Variables are listed in `tests/sessions/session_text.rs` (`${TABLE}`, `${ENGINE}`,
//! `${snapshot:a1}`, `${data_file:a1}`, `${time:now-10d}` ...). Every fixture of a file is built
//! once, before the file runs, by one long-lived Python (`tests/support/pyserver.rs`); each
//! emulator gets a relocated copy (`tests/support/relocate.rs`) and the local pass runs on the
//! original, so every backend starts from the same table. A `fixture` line starts a new session:
//! `SET`s and registered tables do not carry over. The file runs once per backend, the passes side
//! by side; a failure names file, line and backend.
//!
//! `rest`: the fixture's S3 copy is registered as `ns.t` in a fresh warehouse of the test REST
//! catalog (`tests/rest_catalog/server.py`); the runner turns `CREATE TABLE t ENGINE = ${ENGINE}`
//! into `CREATE DATABASE lake ENGINE = DataLakeCatalog(...)` plus `USE lake`, and later `TABLE t` /
//! `table = 't'` into the catalog name `` `ns.t` `` (see `Runner::rest_sql`).
//!
//! `glue` (only in builds with the cargo feature `glue`, as scripts/test.sh runs): the S3 copy is
//! registered as table `t` of a fresh Glue database in moto's Glue (`support/glue_catalog.rs`) and
//! reached through `DataLakeCatalog` with `catalog_type = 'glue'` and `namespaces` = that Glue
//! database; the SQL is rewritten as for `rest`.
//!
//! Orphan files whose scenarios depend on file ages run on local disk only: strays get old
//! modification times there, while object stores stamp the upload time (the emulators' orphan
//! deletion is covered by `tests/orphans/orphans_emulators.rs`). Age-independent ones (zeros, refusals,
//! gc.enabled, an empty table) run everywhere.

use crate::session_text;
use crate::support::backends;
use crate::support::fixtures;
use crate::support::pyserver;
use crate::support::relocate;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use backends::{Backend, Place};
use std::sync::Arc;

use icetrim::FixedClock;
use icetrim::engine::{Engine, Session};
use icetrim::format::OutputFormat;
use icetrim::internals::maintain::target::BeforeCommit;
use pyserver::PyServer;
use session_text::{Block, Resolve, parse_blocks, substitute, time_expr, utc_text, utc_text_ms};

/// A fixture of the file, built once, with its copy on every backend.
struct Prepared {
    fixture: fixtures::Fixture,
    places: Vec<Place>,
    /// The same scenario built again with the same clock, for `clickhouse` blocks (pyiceberg
    /// builds are identical; ClickHouse names its files with fresh UUIDs).
    twin: Option<fixtures::Fixture>,
}

impl Prepared {
    fn place(&self, backend: Backend) -> &Place {
        self.places
            .iter()
            .find(|p| p.backend == backend)
            .expect("a copy on every backend of the file")
    }

    fn now_ms(&self) -> i64 {
        self.fixture.facts["now_ms"].as_i64().expect("facts.now_ms")
    }
}

struct Runner<'a> {
    file: &'a str,
    backend: Backend,
    prepared: &'a [Prepared],
    scratch: &'a Path,
    py: &'a Python,
    session: Session,
    current: Option<usize>,
    remembered: Option<Vec<(String, u64)>>,
    /// Warnings of the last statement, query or error.
    warnings: Vec<String>,
    /// REST pass: the session's table names and the catalog names they stand for (`t` →
    /// `` `<ns>.t` ``, set by the rewritten `CREATE TABLE t ENGINE = ${ENGINE}`).
    aliases: Vec<(String, String)>,
    /// The engine of the current fixture's session.
    engine: Option<Engine>,
    /// `between plan and commit`: the SQL the engine's commit hook runs once, before the next
    /// commit attempt (taken when it runs).
    between: Between,
}

/// The SQL of a `between plan and commit` block, waiting for the next commit attempt.
type Between = Arc<std::sync::Mutex<Option<(Engine, String)>>>;

/// The commit hook of every engine a session file builds: runs the waiting `between` SQL, if
/// any, in a new session of its engine (which sees the same registered tables).
fn between_hook(between: Between) -> BeforeCommit {
    BeforeCommit(Arc::new(move || {
        let next = between.lock().expect("between lock").take();
        Box::pin(async move {
            let Some((engine, sql)) = next else {
                return;
            };
            if let Err(e) = engine.session().execute(&sql).await {
                panic!("between plan and commit: {e}\n{sql}");
            }
        })
    }))
}

/// The file's Python (fixture builds, oracle, ClickHouse), started on first use.
#[derive(Default)]
struct Python(RefCell<Option<PyServer>>);

impl Python {
    fn with<T>(&self, f: impl FnOnce(&mut PyServer) -> T) -> T {
        let mut slot = self.0.borrow_mut();
        f(slot.get_or_insert_with(PyServer::start))
    }
}

struct Vars<'a> {
    prepared: Option<&'a Prepared>,
    place: Option<&'a Place>,
}

impl Resolve for Vars<'_> {
    fn resolve(&self, key: &str) -> Option<String> {
        let (fx, place) = (self.prepared?, self.place?);
        let facts = &fx.fixture.facts;
        let file = |group: &str, label: &str| {
            facts[group][label]
                .as_str()
                .map(|local| place.path_of(local))
        };
        match key.split_once(':') {
            None if key == "TABLE" => Some(place.location().to_string()),
            None if key == "TABLE_PARENT" => place
                .location()
                .rsplit_once('/')
                .map(|(parent, _)| parent.to_string()),
            None if key == "ENGINE" => Some(place.engine.clone()),
            Some(("snapshot", label)) => facts["snapshots"][label].as_i64().map(|i| i.to_string()),
            Some(("data_file", label)) => file("data_files", label),
            Some(("delete_file", label)) => file("delete_files", label),
            Some(("statistics_file", label)) => file("statistics_files", label),
            Some(("partition_statistics_file", label)) => file("partition_statistics_files", label),
            Some(("metadata_file", index)) => {
                let index: usize = index.parse().ok()?;
                facts["metadata_files"][index]
                    .as_str()
                    .map(|local| place.path_of(local))
            }
            Some((kind @ ("time" | "time_ms"), expr)) => {
                let base = |b: &str| match b {
                    "now" => Some(fx.now_ms()),
                    label => facts["snapshot_ts"][label].as_i64(),
                };
                let ms = time_expr(expr, base)?;
                Some(if kind == "time" {
                    utc_text(ms)
                } else {
                    utc_text_ms(ms)
                })
            }
            _ => None,
        }
    }
}

impl Runner<'_> {
    fn fixture(&self, at: &str) -> &Prepared {
        let index = self
            .current
            .unwrap_or_else(|| panic!("{at}: no fixture yet"));
        &self.prepared[index]
    }

    fn place(&self, at: &str) -> &Place {
        self.fixture(at).place(self.backend)
    }

    fn substitute(&self, text: &str, at: &str) -> String {
        let prepared = self.current.map(|i| &self.prepared[i]);
        let vars = Vars {
            prepared,
            place: prepared.map(|p| p.place(self.backend)),
        };
        substitute(text, &vars, at)
    }

    async fn run_block(&mut self, block: &Block) {
        let at = format!("{}:{} ({})", self.file, block.line, self.backend.name());
        let (sql_lines, expected) = match block.body.iter().position(|l| l == "----") {
            Some(i) => (&block.body[..i], &block.body[i + 1..]),
            None => (&block.body[..], &block.body[..0]),
        };
        let raw = sql_lines.join("\n");
        let sql = match self.backend {
            Backend::Rest | Backend::Glue => self.rest_sql(&raw, &at),
            _ => self.substitute(&raw, &at),
        };
        let header = self.substitute(&block.header, &at);
        let words: Vec<&str> = header.split_whitespace().collect();
        match words.as_slice() {
            ["backends", ..] => {}
            ["fixture", ..] => {
                let next = self.current.map_or(0, |i| i + 1);
                let engine = Engine::builder()
                    .clock(FixedClock::new(self.prepared[next].now_ms()))
                    .before_commit(between_hook(self.between.clone()))
                    .build()
                    .expect("engine");
                self.session = engine.session();
                self.engine = Some(engine);
                self.current = Some(next);
                self.remembered = None;
                self.aliases.clear();
            }
            ["statement", "ok"] => match self.session.execute(&sql).await {
                Ok(results) => {
                    self.between_ran(&at);
                    self.note_warnings(&at, &results);
                    self.catalog_read(&at, &sql).await;
                }
                Err(e) => panic!("{at}: expected success, got {e}\n{sql}"),
            },
            ["statement", "error", code, text @ ..] => {
                let text = text.join(" ");
                match self.session.execute(&sql).await {
                    Ok(_) => panic!("{at}: expected error {code}, got success\n{sql}"),
                    Err(e) => {
                        self.between_ran(&at);
                        assert_eq!(e.code().to_string(), *code, "{at}: wrong code for {e}");
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
                self.between_ran(&at);
                self.note_warnings(&at, &results);
                self.catalog_read(&at, &sql).await;
                let last = results.last().unwrap_or_else(|| panic!("{at}: no result"));
                let text = OutputFormat::TabSeparated.render(&last.columns, &last.rows, 0.0);
                self.compare(&at, &sql, mode, text.lines().map(str::to_string), expected);
            }
            ["user", name] => {
                if let Err(e) = self.session.set_user(*name) {
                    panic!("{at}: user {name}: {e}");
                }
            }
            ["clickhouse", mode @ ..] => self.clickhouse(&at, &sql, mode, expected),
            ["oracle", "clean"] => self.oracle_clean(&at).await,
            ["file", state @ ("exists" | "gone"), path] => {
                let exists = self.place(&at).exists(path).await;
                assert_eq!(exists, *state == "exists", "{at}: {path}");
            }
            ["files", "remember"] => self.remembered = Some(self.files(&at).await),
            ["files", "unchanged"] => {
                let before = self.remembered.clone();
                let before = before.unwrap_or_else(|| panic!("{at}: no `files remember`"));
                assert_eq!(
                    self.files(&at).await,
                    before,
                    "{at}: the table's files changed"
                );
            }
            ["files", "kept"] => {
                let before = self.remembered.clone();
                let before = before.unwrap_or_else(|| panic!("{at}: no `files remember`"));
                let now = self.files(&at).await;
                let gone: Vec<_> = before.iter().filter(|f| !now.contains(f)).collect();
                assert!(gone.is_empty(), "{at}: files deleted or changed: {gone:?}");
            }
            ["stray", relative, age] => self.stray(&at, relative, age),
            ["copy", "table", "to", name] => self.copy_table(&at, name),
            ["between", "plan", "and", "commit"] => {
                let engine = self.engine.clone();
                let engine = engine.unwrap_or_else(|| panic!("{at}: no fixture yet"));
                // Catalog passes: the other session needs the catalog database too.
                let sql = match self.backend {
                    Backend::Rest | Backend::Glue => format!("USE lake;\n{sql}"),
                    _ => sql,
                };
                *self.between.lock().expect("between lock") = Some((engine, sql));
            }
            ["warning", text @ ..] => {
                let text = text.join(" ");
                assert!(
                    self.warnings.iter().any(|w| w.contains(&text)),
                    "{at}: no warning holds {text:?}: {:?}",
                    self.warnings
                );
            }
            _ => panic!("{at}: unknown directive {:?}", block.header),
        }
    }

    /// A `between plan and commit` block ran in the statement just executed: one that never
    /// reached a commit is a mistake in the file.
    fn between_ran(&self, at: &str) {
        let waiting = self.between.lock().expect("between lock").is_some();
        assert!(
            !waiting,
            "{at}: the statement made no commit attempt; its `between plan and commit` never ran"
        );
    }

    /// The REST pass's SQL: `CREATE TABLE <t> ENGINE = ${ENGINE}` becomes `CREATE DATABASE lake
    /// ENGINE = DataLakeCatalog(...)` and `USE lake`; afterwards `TABLE <t>` names the catalog
    /// table `` `<ns>.<t>` `` and `table = '<t>'` becomes `table = '<ns>.<t>'`.
    fn rest_sql(&mut self, raw: &str, at: &str) -> String {
        let trimmed = raw.trim();
        if let Some(rest) = trimmed.strip_prefix("CREATE TABLE ")
            && let Some((name, engine)) = rest.split_once(" ENGINE = ")
            && engine.trim() == "${ENGINE}"
        {
            let place = self.place(at);
            let namespace = place.namespace.clone().expect("a registered REST table");
            let create = place.engine.clone();
            self.aliases
                .push((name.to_string(), format!("{namespace}.{name}")));
            return format!("{create};\nUSE lake");
        }
        let mut sql = self.substitute(raw, at);
        for (alias, full) in &self.aliases {
            for (from, to) in [
                (format!("TABLE {alias} "), format!("TABLE `{full}` ")),
                (format!("TABLE {alias}\n"), format!("TABLE `{full}`\n")),
                (format!("table = '{alias}'"), format!("table = '{full}'")),
            ] {
                sql = sql.replace(&from, &to);
            }
            if sql.ends_with(&format!("TABLE {alias}")) {
                sql = format!("{}`{full}`", &sql[..sql.len() - alias.len()]);
            }
        }
        sql
    }

    /// Keeps the statement's warnings for `warning` blocks. Every warning of every session reads
    /// as plain text: no run of spaces (a string continued without `\` keeps its indentation).
    fn note_warnings(&mut self, at: &str, results: &[icetrim::engine::QueryResult]) {
        self.warnings = results.iter().flat_map(|r| r.warnings.clone()).collect();
        for w in &self.warnings {
            assert!(
                !w.contains("  "),
                "{at}: a run of spaces in the warning {w:?}"
            );
        }
    }

    fn compare(
        &self,
        at: &str,
        sql: &str,
        mode: &[&str],
        got: impl Iterator<Item = String>,
        expected: &[String],
    ) {
        let mut got: Vec<String> = got.collect();
        let mut want: Vec<String> = expected.iter().map(|l| self.substitute(l, at)).collect();
        if mode.first() == Some(&"rowsort") {
            got.sort();
            want.sort();
        }
        assert_eq!(got, want, "{at}: rows differ for\n{sql}");
    }

    fn clickhouse(&self, at: &str, sql: &str, mode: &[&str], expected: &[String]) {
        if self.backend != Backend::Local {
            return;
        }
        let twin = self.fixture(at).twin.as_ref();
        let twin = twin.unwrap_or_else(|| panic!("{at}: no twin of the fixture"));
        let dir = twin.table_dir();
        let rows = (self.py)
            .with(|py| py.clickhouse(&dir, &[sql]))
            .unwrap_or_else(|e| panic!("{at}: ClickHouse failed: {e}\n{sql}"));
        let lines = rows.into_iter().map(|row| row.join("\t"));
        self.compare(at, sql, mode, lines, expected);
    }

    /// On `rest` and `glue`, after every `ALTER` or `OPTIMIZE` that succeeded: pyiceberg loads
    /// the table through the catalog and reads every branch and tag, and the refs it sees are
    /// the ones icetrim's `system.iceberg_refs` shows (what icetrim committed is what the catalog
    /// serves).
    async fn catalog_read(&mut self, at: &str, sql: &str) {
        let statement = sql.trim_start().to_ascii_uppercase();
        if !matches!(self.backend, Backend::Rest | Backend::Glue)
            || !(statement.starts_with("ALTER") || statement.starts_with("OPTIMIZE"))
        {
            return;
        }
        let place = self.place(at);
        let namespace = place.namespace.clone().expect("a registered catalog table");
        let catalog = match &place.warehouse {
            Some(warehouse) if self.backend == Backend::Rest => serde_json::json!({
                "type": "rest", "uri": crate::support::rest_catalog::uri(), "warehouse": warehouse,
            }),
            _ => serde_json::json!({"type": "glue"}),
        };
        let read = self.py.with(|py| py.catalog_read(catalog, &namespace, "t"));
        let mut seen: Vec<String> = read["refs"]
            .as_object()
            .unwrap_or_else(|| panic!("{at}: pyiceberg read no refs: {read}"))
            .iter()
            .map(|(name, r)| format!("{name}\t{}", r[0]))
            .collect();
        seen.sort();
        let ours = self
            .session
            .execute(&format!(
                "SELECT name, snapshot_id FROM system.iceberg_refs WHERE database = 'lake' \
                 AND table = '{namespace}.t' ORDER BY name"
            ))
            .await
            .unwrap_or_else(|e| panic!("{at}: system.iceberg_refs: {e}"));
        let last = ours.last().unwrap_or_else(|| panic!("{at}: no result"));
        let text = OutputFormat::TabSeparated.render(&last.columns, &last.rows, 0.0);
        let ours: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(
            seen, ours,
            "{at}: refs read through the catalog by pyiceberg differ from icetrim's\n{sql}"
        );
    }

    async fn oracle_clean(&self, at: &str) {
        let dir = self.place(at).local_view(self.scratch).await;
        let report = self.py.with(|py| py.inspect(&newest_metadata(&dir)));
        assert_eq!(
            report["missing"],
            serde_json::json!([]),
            "{at}: files missing after the session"
        );
        assert!(
            report.get("errors").is_none(),
            "{at}: pyiceberg could not read the table: {}",
            report["errors"]
        );
    }

    async fn files(&self, at: &str) -> Vec<(String, u64)> {
        let listed = self.place(at).root.files().await;
        listed
            .into_iter()
            .map(|(rel, size, _)| (rel, size))
            .collect()
    }

    fn stray(&self, at: &str, relative: &str, age: &str) {
        assert_eq!(self.backend, Backend::Local, "{at}: strays are local only");
        let now = self.fixture(at).now_ms();
        let mtime = time_expr(&format!("now-{age}"), |_| Some(now))
            .unwrap_or_else(|| panic!("{at}: bad age {age:?}"));
        let path = Path::new(self.place(at).location()).join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(&path, b"stray file of a session").expect("write a stray");
        relocate::set_mtime(&path, mtime);
    }
}

impl Runner<'_> {
    /// (local only) A copy of the table folder next to it, as `${TABLE_PARENT}/<name>`.
    fn copy_table(&self, at: &str, name: &str) {
        assert_eq!(self.backend, Backend::Local, "{at}: copies are local only");
        let from = Path::new(self.place(at).location()).to_path_buf();
        let to = from.parent().expect("a parent").join(name);
        copy_folder(&from, &to);
    }
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the table folder") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The metadata file with the highest version in the table's `metadata/` folder.
fn newest_metadata(table: &Path) -> PathBuf {
    let mut best: Option<(u64, PathBuf)> = None;
    for entry in std::fs::read_dir(table.join("metadata")).expect("metadata dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
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

/// The backends named by the file's `backends` line (local when there is none).
fn backends_of(blocks: &[Block], file: &str) -> Vec<Backend> {
    let Some(first) = blocks.first() else {
        return vec![Backend::Local];
    };
    let words: Vec<&str> = first.header.split_whitespace().collect();
    match words.split_first() {
        Some((&"backends", names)) => names
            .iter()
            .map(|n| Backend::parse(n).unwrap_or_else(|| panic!("{file}: unknown backend {n}")))
            .filter(|b| b.available())
            .collect(),
        _ => vec![Backend::Local],
    }
}

/// Builds every fixture of the file and copies it to every backend (and builds a ClickHouse twin
/// when the file has `clickhouse` blocks).
async fn prepare(blocks: &[Block], backends: &[Backend], py: &Python) -> Vec<Prepared> {
    let wants_twin = blocks.iter().any(|b| b.header.starts_with("clickhouse"));
    let mut prepared = Vec::new();
    for block in blocks.iter().filter(|b| b.header.starts_with("fixture")) {
        let words: Vec<&str> = block.header.split_whitespace().collect();
        let scenario = words.get(1).expect("fixture <scenario>");
        let orphans = words.contains(&"orphans");
        let now = fixtures::now_ms();
        let fixture = py.with(|py| py.make_fixture(scenario, now, orphans));
        let location = fixture.fact_str("location").to_string();
        let original = Place::local(&fixture.table_dir(), &location);
        let copies = backends
            .iter()
            .filter(|b| **b != Backend::Local)
            .map(|b| Place::copy_of(&original, *b));
        let mut places = futures::future::join_all(copies).await;
        let twin = wants_twin.then(|| py.with(|py| py.make_fixture(scenario, now, orphans)));
        places.push(original);
        prepared.push(Prepared {
            fixture,
            places,
            twin,
        });
    }
    prepared
}

async fn run_file(name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sessions")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let blocks = parse_blocks(&text);
    let backends = backends_of(&blocks, name);
    let scratch = tempfile::tempdir().expect("scratch folder");
    let started = Instant::now();
    let py = Python::default();
    let prepared = prepare(&blocks, &backends, &py).await;
    let mut timings = vec![("fixtures", started.elapsed())];
    // The passes run side by side (one task: the Python server is shared, its calls block).
    let passes = backends.iter().map(|backend| async {
        let started = Instant::now();
        let mut runner = Runner {
            file: name,
            backend: *backend,
            prepared: &prepared,
            scratch: scratch.path(),
            py: &py,
            session: Engine::builder().build().expect("engine").session(),
            current: None,
            remembered: None,
            warnings: Vec::new(),
            aliases: Vec::new(),
            engine: None,
            between: Between::default(),
        };
        for block in &blocks {
            runner.run_block(block).await;
        }
        (backend.name(), started.elapsed())
    });
    timings.extend(futures::future::join_all(passes).await);
    let report: Vec<String> = timings
        .iter()
        .map(|(what, t)| format!("{what} {:.1}s", t.as_secs_f64()))
        .collect();
    eprintln!("{name}: {}", report.join(", "));
}

macro_rules! sessions {
    ($($test:ident => $file:literal),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                run_file($file).await;
            }
        )*

        /// The session files the tests above run.
        const REGISTERED: &[&str] = &[$($file),*];
    };
}

/// A session file that no test runs would look green while asserting nothing.
#[test]
fn every_session_file_is_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sessions");
    let mut unregistered = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/sessions") {
        let name = entry
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".test") && !REGISTERED.contains(&name.as_str()) {
            unregistered.push(name);
        }
    }
    assert!(
        unregistered.is_empty(),
        "not in sessions!: {unregistered:?}"
    );
}

sessions! {
    argument_errors => "argument_errors.test",
    base_moved => "base_moved.test",
    grants => "grants.test",
    compaction => "compaction.test",
    compaction_where => "compaction_where.test",
    empty_table => "empty_table.test",
    expire_branches_tags => "expire_branches_tags.test",
    expire_clean_metadata => "expire_clean_metadata.test",
    expire_clean_metadata_evolved => "expire_clean_metadata_evolved.test",
    catalog_delete_after_commit => "catalog_delete_after_commit.test",
    expire_counted_once => "expire_counted_once.test",
    expire_explained => "expire_explained.test",
    expire_defaults => "expire_defaults.test",
    expire_delete_files => "expire_delete_files.test",
    expire_fuse => "expire_fuse.test",
    expire_refs => "expire_refs.test",
    expire_retain_last => "expire_retain_last.test",
    expire_rewrites => "expire_rewrites.test",
    expire_snapshot_ids => "expire_snapshot_ids.test",
    expire_staged => "expire_staged.test",
    rewrite_manifests => "rewrite_manifests.test",
    expire_statistics => "expire_statistics.test",
    expire_table_properties => "expire_table_properties.test",
    maintain_table => "maintain_table.test",
    maintenance_log => "maintenance_log.test",
    gates => "gates.test",
    hints => "hints.test",
    introspection => "introspection.test",
    metadata_sql => "metadata_sql.test",
    orphans_clickhouse => "orphans_clickhouse.test",
    output_formats => "output_formats.test",
    orphans_location => "orphans_location.test",
    orphans_metadata_files => "orphans_metadata_files.test",
    orphans_other_tables => "orphans_other_tables.test",
    orphans_pyiceberg_tables => "orphans_pyiceberg_tables.test",
    orphans_reachability => "orphans_reachability.test",
    orphans_refusals => "orphans_refusals.test",
    orphans_strays => "orphans_strays.test",
    path_mistakes => "path_mistakes.test",
    orphans_threshold => "orphans_threshold.test",
    pinned_metadata => "pinned_metadata.test",
    refs_ddl => "refs_ddl.test",
    small_findings => "small_findings.test",
    storage_mistakes => "storage_mistakes.test",
    snapshots_cherrypick => "snapshots_cherrypick.test",
    snapshots_rollback => "snapshots_rollback.test",
    snapshots_v1 => "snapshots_v1.test",
    table_properties => "table_properties.test",
    tables_and_settings => "tables_and_settings.test",
}
