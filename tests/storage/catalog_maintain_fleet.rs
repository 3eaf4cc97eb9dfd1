//! `SYSTEM MAINTAIN DATABASE` over a fleet of 50 tables of different shapes, in the test REST
//! catalog and in AWS Glue (moto), all on the S3 emulator: fast appends (format v1 and v2), many
//! small files, manifests to rewrite, rolled-back merge-on-read deletes, a ClickHouse-written
//! table with a position delete, branches and tags with their own retention,
//! `gc.enabled = false`, tables with maintenance turned off, empty tables, and tables whose
//! location holds another table (orphan removal on, the inner table protected). One run does what each table's policy says;
//! pyiceberg and ClickHouse read every ref of every table afterwards with the rows it had; the
//! log and the metrics match the answer; a second run finds nothing due and writes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use futures::StreamExt;
use icetrim::engine::Session;
use serde_json::Value;

use crate::support::catalog::{rows, run, session};
use crate::support::fixtures::{self, Fixture};
use crate::support::relocate::{Rewrite, Root, copy_table};
use crate::support::{emulator_var, glue_catalog, rest_catalog, s3_emulator, unique};

/// One kind of table in the fleet.
struct Shape {
    /// The name prefix of its tables.
    name: &'static str,
    /// The fixture copied for each of them.
    fixture: &'static str,
    copies: usize,
    /// Table properties set with `ALTER TABLE … SET TBLPROPERTIES` before the run.
    properties: &'static [(&'static str, &'static str)],
    /// The run's status of compaction, manifest rewrite, expiry and orphan removal.
    statuses: [&'static str; 4],
    /// The refs the run's expiry removes (their max-ref-age has passed).
    removed_refs: &'static [&'static str],
    /// The table deletes nothing (gc.enabled = false, or maintenance off).
    deletes_nothing: bool,
}

const PROCEDURES: [&str; 4] = [
    "rewrite_data_files",
    "rewrite_manifests",
    "expire_snapshots",
    "remove_orphan_files",
];

const LINEAR: [&str; 4] = ["ok", "not due", "ok", "disabled"];

/// 50 tables; `outer` tables hold the `inner` table of the same number under their location.
const SHAPES: &[Shape] = &[
    Shape {
        name: "linear",
        fixture: "py_v2_linear",
        copies: 7,
        properties: &[],
        statuses: LINEAR,
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "vone",
        fixture: "py_v1_linear",
        copies: 3,
        properties: &[],
        statuses: LINEAR,
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "off",
        fixture: "py_v2_linear",
        copies: 2,
        properties: &[("icetrim.maintain.enabled", "false")],
        statuses: ["disabled"; 4],
        removed_refs: &[],
        deletes_nothing: true,
    },
    Shape {
        name: "many",
        fixture: "py_v2_many",
        copies: 5,
        properties: &[],
        statuses: LINEAR,
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "manifests",
        fixture: "py_v2_many",
        copies: 5,
        properties: &[
            ("icetrim.maintain.compact.min-input-files", "1000"),
            ("icetrim.maintain.manifests.min-count", "10"),
        ],
        statuses: ["not due", "ok", "ok", "disabled"],
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "rolled",
        fixture: "py_v2_delete_files",
        copies: 4,
        properties: &[],
        statuses: ["not due", "not due", "ok", "disabled"],
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "clickhouse",
        fixture: "ch_v2",
        copies: 4,
        properties: &[],
        statuses: ["not due", "not due", "not due", "disabled"],
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "branches",
        fixture: "py_v2_branches_tags",
        copies: 8,
        properties: &[],
        statuses: ["ok", "not due", "ok", "disabled"],
        removed_refs: &["stale", "t_short"],
        deletes_nothing: false,
    },
    Shape {
        name: "nogc",
        fixture: "py_v2_gc_disabled",
        copies: 4,
        properties: &[],
        statuses: ["ok", "not due", "skipped", "skipped"],
        removed_refs: &[],
        deletes_nothing: true,
    },
    Shape {
        name: "empty",
        fixture: "py_v2_empty",
        copies: 2,
        properties: &[],
        statuses: ["not due", "not due", "not due", "disabled"],
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "outer",
        fixture: "py_v2_linear",
        copies: 3,
        properties: &[("icetrim.maintain.orphans.enabled", "true")],
        statuses: ["ok", "not due", "ok", "not due"],
        removed_refs: &[],
        deletes_nothing: false,
    },
    Shape {
        name: "inner",
        fixture: "py_v2_linear",
        copies: 3,
        properties: &[],
        statuses: LINEAR,
        removed_refs: &[],
        deletes_nothing: false,
    },
];

/// Where the fleet is catalogued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Rest,
    Glue,
}

/// One table of the fleet.
struct Member {
    shape: &'static Shape,
    /// The table's name in its namespace (`linear03`).
    name: String,
    root: Root,
}

/// The fleet, registered in its catalog, and a session with database `lake` on it.
struct Fleet {
    kind: Kind,
    /// The REST warehouse, or the Glue database.
    place: String,
    /// The namespace of every table (`ns`, or the Glue database).
    namespace: String,
    members: Vec<Member>,
    session: Session,
}

impl Fleet {
    /// Copies of `fixtures` (built from [`SHAPE_FIXTURES`]) registered in `kind`'s catalog.
    async fn build(kind: Kind, fixtures: &[Fixture]) -> Fleet {
        let (io, base) = s3_emulator("fleet");
        let mut members = Vec::new();
        for shape in SHAPES {
            for i in 1..=shape.copies {
                let name = format!("{}{i:02}", shape.name);
                let root = match shape.name {
                    "inner" => format!("{base}/outer{i:02}/inner"),
                    _ => format!("{base}/{name}"),
                };
                let root = Root::new(io.clone(), &root);
                members.push(Member { shape, name, root });
            }
        }
        assert_eq!(members.len(), 50);
        let copies = members.iter().map(|m| {
            let fixture = &fixtures[SHAPE_FIXTURES
                .iter()
                .position(|f| *f == m.shape.fixture)
                .expect("a fixture of the shape")];
            copy_fixture(fixture, &m.root)
        });
        futures::stream::iter(copies)
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;
        let (place, namespace, create) = match kind {
            Kind::Rest => {
                let warehouse = unique("fleet");
                rest_catalog::warehouse(&warehouse, serde_json::json!({})).await;
                let create =
                    rest_catalog::create_database("lake", &warehouse, "vended_credentials = 0");
                (warehouse, "ns".to_string(), create)
            }
            Kind::Glue => {
                let database = unique("fleet").replace('-', "_");
                glue_catalog::create_glue_database(&database).await;
                let create = glue_catalog::create_database("lake", &database);
                (database.clone(), database, create)
            }
        };
        for m in &members {
            let metadata = m.root.uri(&m.root.newest_metadata().await);
            match kind {
                Kind::Rest => rest_catalog::register(&place, &["ns"], &m.name, &metadata).await,
                Kind::Glue => {
                    glue_catalog::add_table(&place, &m.name, &m.root.root, &metadata).await
                }
            }
        }
        let mut session = session();
        run(&mut session, &create).await;
        for m in members.iter().filter(|m| !m.shape.properties.is_empty()) {
            let properties: Vec<String> = m
                .shape
                .properties
                .iter()
                .map(|(k, v)| format!("'{k}' = '{v}'"))
                .collect();
            let sql = format!(
                "ALTER TABLE lake.`{namespace}.{}` SET TBLPROPERTIES ({})",
                m.name,
                properties.join(", ")
            );
            run(&mut session, &sql).await;
        }
        Fleet {
            kind,
            place,
            namespace,
            members,
            session,
        }
    }

    /// `namespace.name`, as the answer's `table` column names it.
    fn qualified(&self, member: &Member) -> String {
        format!("{}.{}", self.namespace, member.name)
    }

    /// pyiceberg (every ref) and ClickHouse (current rows and every ref) reading the tables
    /// `names` through the catalog, in one process: `name -> reading`.
    fn read(&self, names: &[&str]) -> BTreeMap<String, Value> {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rest_catalog/read.py");
        let endpoint = emulator_var("ICETRIM_S3_ENDPOINT");
        let bucket = emulator_var("ICETRIM_S3_BUCKET");
        let uri = match self.kind {
            Kind::Rest => rest_catalog::uri(),
            Kind::Glue => format!("glue+{endpoint}"),
        };
        let tables = names.join(",");
        let args = [
            uri.as_str(),
            self.place.as_str(),
            self.namespace.as_str(),
            tables.as_str(),
            endpoint.as_str(),
            bucket.as_str(),
        ];
        let out = fixtures::run_python_json(&script, &args);
        assert!(out.get("error").is_none(), "{:?} read: {out}", self.kind);
        names
            .iter()
            .map(|n| (n.to_string(), out[*n].clone()))
            .collect()
    }
}

/// The fixtures the shapes copy, in this order.
const SHAPE_FIXTURES: [&str; 8] = [
    "py_v2_linear",
    "py_v1_linear",
    "py_v2_many",
    "py_v2_delete_files",
    "ch_v2",
    "py_v2_branches_tags",
    "py_v2_gc_disabled",
    "py_v2_empty",
];

/// Every fixture of [`SHAPE_FIXTURES`], built two at a time.
fn build_fixtures(now: i64) -> Vec<Fixture> {
    std::thread::scope(|scope| {
        let mut built = Vec::new();
        for pair in SHAPE_FIXTURES.chunks(2) {
            let handles: Vec<_> = pair
                .iter()
                .map(|name| scope.spawn(move || fixtures::make_fixture(name, now, false)))
                .collect();
            built.extend(handles.into_iter().map(|h| h.join().expect("a fixture")));
        }
        built
    })
}

async fn copy_fixture(fixture: &Fixture, root: &Root) {
    let dir = fixture.table_dir();
    let dir = dir.to_str().expect("UTF-8 paths");
    let local = Root::new(icetrim::internals::io::FileIO::local(), dir);
    copy_table(&local, root, &Rewrite::from_local(dir, &root.root), false).await;
}

/// The answer's rows as `(table, procedure) -> (status, reason)`.
fn by_table(rows: &[String]) -> BTreeMap<(String, String), (String, String)> {
    rows.iter()
        .map(|r| {
            let c: Vec<&str> = r.split('\t').collect();
            (
                (c[1].to_string(), c[2].to_string()),
                (c[3].to_string(), c[4].to_string()),
            )
        })
        .collect()
}

/// `name=value, …` (a row's reason) as pairs; other text gives none.
fn metrics_of(reason: &str) -> Vec<(String, i64)> {
    reason
        .split(", ")
        .filter_map(|part| part.split_once('='))
        .filter_map(|(name, value)| Some((name.to_string(), value.parse().ok()?)))
        .collect()
}

async fn maintain_the_fleet(kind: Kind, fixtures: &[Fixture]) {
    let clock = std::time::Instant::now();
    let lap = |what: &str| {
        eprintln!(
            "{kind:?} fleet: {what} at {:.1} s",
            clock.elapsed().as_secs_f64()
        )
    };
    let mut fleet = Fleet::build(kind, fixtures).await;
    lap("built");
    // Before: one table of each shape (the copies of a shape hold the same rows).
    let firsts: Vec<&str> = SHAPES
        .iter()
        .map(|shape| {
            let first = fleet.members.iter().find(|m| std::ptr::eq(m.shape, shape));
            first.expect("a table of every shape").name.as_str()
        })
        .collect();
    let before = fleet.read(&firsts);
    let first_of = |m: &Member| {
        firsts[SHAPES
            .iter()
            .position(|s| std::ptr::eq(s, m.shape))
            .expect("a shape")]
    };
    lap("read");
    let mut files_before = BTreeMap::new();
    for m in &fleet.members {
        files_before.insert(m.name.clone(), m.root.files().await);
    }

    // EXPLAIN: every table's decisions, nothing written.
    let explained = rows(&mut fleet.session, "EXPLAIN SYSTEM MAINTAIN DATABASE lake").await;
    assert_eq!(explained.len(), 200, "{explained:#?}");
    let decisions = by_table(&explained);
    for m in &fleet.members {
        for (procedure, status) in PROCEDURES.iter().zip(m.shape.statuses) {
            let key = (fleet.qualified(m), procedure.to_string());
            let expected = if status == "ok" { "due" } else { status };
            assert_eq!(
                decisions[&key].0, expected,
                "{key:?}: {:?}",
                decisions[&key]
            );
        }
    }
    for m in &fleet.members {
        assert_eq!(m.root.files().await, files_before[&m.name], "EXPLAIN wrote");
    }

    lap("explained");
    // The run.
    let done = rows(&mut fleet.session, "SYSTEM MAINTAIN DATABASE lake").await;
    lap("maintained");
    assert_eq!(done.len(), 200, "{done:#?}");
    let outcome = by_table(&done);
    for m in &fleet.members {
        for (procedure, status) in PROCEDURES.iter().zip(m.shape.statuses) {
            let key = (fleet.qualified(m), procedure.to_string());
            assert_eq!(outcome[&key].0, status, "{key:?}: {:?}", outcome[&key]);
        }
    }

    // What the run did to the files: nothing deleted where nothing may be; maintenance off
    // writes nothing at all (not even a lease); the inner tables' live files all stay.
    for m in &fleet.members {
        let now: BTreeSet<String> = m.root.files().await.into_iter().map(|f| f.0).collect();
        let was = &files_before[&m.name];
        if m.shape.deletes_nothing {
            for (file, _, _) in was {
                assert!(now.contains(file), "{}: {file} deleted", m.name);
            }
        }
        if m.shape.name == "off" {
            let was: BTreeSet<String> = was.iter().map(|f| f.0.clone()).collect();
            assert_eq!(now, was, "{} was written", m.name);
        }
        if m.shape.name == "inner" {
            let table = fleet.qualified(m);
            run(&mut fleet.session, "USE lake").await;
            let live = rows(
                &mut fleet.session,
                &format!("SELECT file_path FROM system.iceberg_files WHERE table = '{table}'"),
            )
            .await;
            assert!(!live.is_empty());
            for path in &live {
                let relative = path.trim_start_matches(&format!("{}/", m.root.root));
                assert!(now.contains(relative), "{table}: {path} gone");
            }
        }
    }

    // Every ref that stays reads as before, in pyiceberg and in ClickHouse; the refs that go are
    // those whose max-ref-age passed.
    let everyone: Vec<&str> = fleet.members.iter().map(|m| m.name.as_str()).collect();
    let after = fleet.read(&everyone);
    lap("read again");
    for m in &fleet.members {
        let (was, is) = (&before[first_of(m)], &after[&m.name]);
        assert_eq!(was["clickhouse"], is["clickhouse"], "{}", m.name);
        for engine in ["pyiceberg", "clickhouse_refs"] {
            let refs_before = was[engine].as_object().expect("refs");
            let refs_after = is[engine].as_object().expect("refs");
            let removed: BTreeSet<&str> = refs_before
                .keys()
                .filter(|r| !refs_after.contains_key(*r))
                .map(String::as_str)
                .collect();
            let expected: BTreeSet<&str> = m.shape.removed_refs.iter().copied().collect();
            assert_eq!(removed, expected, "{} {engine} refs", m.name);
            for (name, rows) in refs_after {
                assert_eq!(
                    Some(rows),
                    refs_before.get(name),
                    "{} {engine} {name}",
                    m.name
                );
            }
        }
    }

    // The log holds exactly the answer's rows; the metrics add them up.
    run(&mut fleet.session, "USE lake").await;
    let logged = rows(
        &mut fleet.session,
        "SELECT dry_run, database, table, procedure, status, reason FROM \
         system.iceberg_maintenance_log ORDER BY table, start_time",
    )
    .await;
    let mut answered: Vec<String> = done
        .iter()
        .map(|r| {
            let c: Vec<&str> = r.split('\t').collect();
            format!("0\t{}\t{}\t{}\t{}\t{}", c[0], c[1], c[2], c[3], c[4])
        })
        .collect();
    let mut logged_sorted = logged.clone();
    answered.sort();
    logged_sorted.sort();
    assert_eq!(logged_sorted, answered);
    let metrics = rows(
        &mut fleet.session,
        "SELECT name, coalesce(labels['table'], ''), coalesce(labels['procedure'], ''), \
         coalesce(labels['status'], ''), value FROM system.iceberg_maintenance_metrics WHERE \
         name IN ('icetrim_maintain_procedures', 'icetrim_maintain_files_deleted', \
         'icetrim_maintain_runs')",
    )
    .await;
    let metric = |name: &str, table: &str, procedure: &str, status: &str| -> f64 {
        metrics
            .iter()
            .map(|r| r.split('\t').collect::<Vec<_>>())
            .find(|c| c[0] == name && c[1] == table && c[2] == procedure && c[3] == status)
            .map(|c| c[4].parse().expect("a number"))
            .unwrap_or_else(|| panic!("no {name} {table} {procedure} {status}: {metrics:#?}"))
    };
    assert_eq!(metric("icetrim_maintain_runs", "", "", "ok"), 1.0);
    for ((table, procedure), (status, reason)) in &outcome {
        assert_eq!(
            metric("icetrim_maintain_procedures", table, procedure, status),
            1.0
        );
        let deleted: i64 = metrics_of(reason)
            .iter()
            .filter(|(n, _)| n.starts_with("deleted_") && n.ends_with("_count"))
            .map(|(_, v)| v)
            .sum();
        let files = metric("icetrim_maintain_files_deleted", table, procedure, "");
        assert_eq!(files, deleted as f64, "{table} {procedure}");
    }
    let freed = rows(
        &mut fleet.session,
        "SELECT count() FROM system.iceberg_maintenance_log WHERE procedure = \
         'expire_snapshots' AND status = 'ok' AND NOT bytes_freed > 0",
    )
    .await;
    assert_eq!(freed, ["0"], "every expiry that ran freed bytes");

    // A second run finds nothing due, and writes nothing.
    let mut files_done = BTreeMap::new();
    for m in &fleet.members {
        files_done.insert(m.name.clone(), m.root.files().await);
    }
    let again = rows(&mut fleet.session, "SYSTEM MAINTAIN DATABASE lake").await;
    lap("maintained again");
    for row in &again {
        let status = row.split('\t').nth(3).expect("a status");
        assert!(
            ["not due", "disabled", "skipped"].contains(&status),
            "{row}"
        );
    }
    for m in &fleet.members {
        assert_eq!(
            m.root.files().await,
            files_done[&m.name],
            "{} written",
            m.name
        );
    }
}

/// Both catalogs at once, as one test: the fleets mostly wait on moto, the REST test server,
/// pyiceberg and chdb, so they share one test slot (and one build of the fixtures) and leave the
/// other to the rest of this binary. Each fleet runs on a thread and runtime of its own.
#[test]
fn one_run_maintains_fifty_tables_in_each_catalog_by_their_policies() {
    let started = std::time::Instant::now();
    let fixtures = build_fixtures(fixtures::now_ms());
    eprintln!("fixtures built in {:.1} s", started.elapsed().as_secs_f64());
    let mut kinds = vec![Kind::Rest];
    if cfg!(feature = "glue") {
        kinds.push(Kind::Glue);
    }
    std::thread::scope(|scope| {
        let fixtures = &fixtures;
        let fleets: Vec<_> = kinds
            .into_iter()
            .map(|kind| {
                scope.spawn(move || {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("a runtime")
                        .block_on(maintain_the_fleet(kind, fixtures))
                })
            })
            .collect();
        for fleet in fleets {
            if let Err(panic) = fleet.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}
