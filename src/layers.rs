//! The import rules between layers (see the crate comment), checked on the source tree so they
//! stay true: a reader can run the same greps (`grep -rn "crate::engine\|crate::format\|crate::shell"
//! src/maintain src/iceberg src/io src/sql src/plan` and the others below) and find nothing.

use std::path::{Path, PathBuf};

/// `(folders or files under src/, what none of their lines may contain)`. Comments count too, so
/// the greps of the issue and this test agree.
const RULES: &[(&[&str], &[&str])] = &[
    (
        &["maintain", "catalog", "iceberg", "io", "sql", "plan"],
        &["crate::engine", "crate::format", "crate::shell"],
    ),
    (&["io", "iceberg"], &["crate::maintain", "crate::catalog"]),
    // maintain → catalog → iceberg → io: the catalog layer never reaches up.
    (
        &["catalog"],
        &[
            "crate::maintain",
            "crate::settings",
            "crate::sql",
            "crate::plan",
        ],
    ),
    (&["sql"], &["crate::settings"]),
    // Maintenance takes typed calls (`plan`), never SQL: the SQL front end is the engine's.
    (&["maintain"], &["crate::sql"]),
    // Storage knows nothing of Iceberg.
    (&["io"], &["crate::iceberg"]),
    // Output formats render values; they never run statements.
    (
        &["format"],
        &["crate::engine", "crate::maintain", "crate::shell"],
    ),
    // The table generator writes Iceberg; it runs no statement and no procedure.
    (
        &["generate"],
        &["crate::engine", "crate::maintain", "crate::shell"],
    ),
    (&["settings"], &["crate::sql"]),
    // The metadata tables read the Iceberg model and storage; the query layer runs SQL over
    // whatever tables it is given. Neither reaches up to the engine, and nothing below the engine
    // reaches them.
    // (`inspect` reads one thing of maintenance: the retention policy function, so that
    // `system.iceberg_retention` and an expiry's EXPLAIN compute it the same way.)
    (
        &["inspect"],
        &[
            "crate::engine",
            "crate::shell",
            "crate::maintain::compact",
            "crate::maintain::orphans",
            "crate::query",
            "crate::sql",
            "crate::format",
        ],
    ),
    (
        &["query"],
        &[
            "crate::engine",
            "crate::shell",
            "crate::maintain",
            "crate::inspect",
        ],
    ),
    (
        &[
            "maintain", "catalog", "iceberg", "io", "sql", "plan", "format",
        ],
        &["crate::inspect", "crate::query"],
    ),
    (
        &[
            "progress.rs",
            "pool.rs",
            "literal.rs",
            "time_zone.rs",
            "clock.rs",
            "hints.rs",
        ],
        &[
            "use crate::engine",
            "use crate::maintain",
            "use crate::sql",
            "use crate::settings",
            "use crate::iceberg",
            "use crate::io",
            "use crate::format",
            "use crate::shell",
            "use crate::plan",
        ],
    ),
    // The DataFusion host front sits on the engine as the shell does: it runs statements through
    // sessions and reaches nothing below them but the query layer's error mapping.
    (
        &["host.rs"],
        &[
            "crate::shell",
            "crate::maintain",
            "crate::inspect",
            "crate::sql",
            "crate::iceberg",
            "crate::io",
            "crate::catalog",
        ],
    ),
    (
        &[
            "engine", "maintain", "catalog", "iceberg", "io", "sql", "plan", "format", "inspect",
            "query", "settings", "generate",
        ],
        &["crate::host"],
    ),
    // Progress reaches maintenance one way: explicitly, on the target.
    (&["."], &["Progress::current", "task_local!"]),
];

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.to_path_buf());
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        rust_files(&entry.path(), out);
    }
}

#[test]
fn layers_only_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let this_file = src.join("layers.rs");
    let mut broken = Vec::new();
    for (places, forbidden) in RULES {
        let mut files = Vec::new();
        for place in *places {
            let path = src.join(place);
            assert!(
                path.exists(),
                "{} is gone: update the rules",
                path.display()
            );
            rust_files(&path, &mut files);
        }
        for file in files.iter().filter(|f| **f != this_file) {
            let text = std::fs::read_to_string(file).expect("a readable source file");
            for (n, line) in text.lines().enumerate() {
                for word in *forbidden {
                    if line.contains(word) {
                        broken.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports against the layers:\n{}",
        broken.join("\n")
    );
}
