//! The README's demo and tour, run as written: every shell block after a `<!-- tested: NAME -->`
//! line of `README.md` runs in `bash -euo pipefail` with the built `icetrim` and
//! `icetrim-generate` first on `PATH` (the tour says to put them there). The one rewrite:
//! `cargo run --` becomes the built `icetrim` (a cargo inside `cargo test` would wait for the
//! build lock the test run holds). A README edit that breaks a block fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::fixtures::oracle_inspect;

/// The shell blocks of `README.md` marked `<!-- tested: name -->`, by name.
fn tested_blocks() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let mut blocks = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("<!-- tested: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(
            lines.next(),
            Some("```sh"),
            "block {name}: a ```sh fence follows"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        blocks.push((name.to_string(), body.join("\n")));
    }
    blocks
}

fn block(name: &str) -> String {
    tested_blocks()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, body)| body)
        .unwrap_or_else(|| panic!("README.md has no block `<!-- tested: {name} -->`"))
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_icetrim"))
        .parent()
        .expect("the binaries' folder")
        .to_path_buf()
}

/// Runs `script` as the README's reader would; its standard output.
fn run(script: &str) -> String {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = script.replace("cargo run --", env!("CARGO_BIN_EXE_icetrim"));
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .env("PATH", path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the block failed ({}):\n{script}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The metric `name` in the rows printed after the echoed `statement`.
fn metric_after(out: &str, statement: &str, name: &str) -> i64 {
    let after = out
        .split_once(statement)
        .unwrap_or_else(|| panic!("{statement:?} was not echoed:\n{out}"))
        .1;
    after
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}\t")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} after {statement:?}:\n{after}"))
}

/// The newest metadata file of a folder: `vN.metadata.json` (icetrim's and the generator's) or
/// `NNNNN-<uuid>.metadata.json` (a catalog's), by version.
fn newest_metadata(folder: &Path) -> PathBuf {
    let version = |p: &Path| -> Option<u64> {
        let name = p.file_name()?.to_str()?.strip_suffix(".metadata.json")?;
        let digits = name.trim_start_matches('v');
        digits.split('-').next()?.parse().ok()
    };
    std::fs::read_dir(folder)
        .expect("the tour's table")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| version(p).is_some())
        .max_by_key(|p| version(p))
        .expect("a metadata file")
}

#[test]
fn every_tested_block_has_a_test() {
    let names: Vec<String> = tested_blocks().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["demo", "tour-path", "tour-rest"],
        "a new tested block needs its test here"
    );
}

#[test]
fn the_demo_runs_as_written() {
    let out = run(&block("demo"));
    assert!(out.contains("metric_name"), "{out}");
}

/// Both tours share one table (/tmp/icetrim-tour), so they run in order in one test: the path tour,
/// then the REST tour on the table it left.
#[test]
fn the_tours_run_as_written() {
    let out = run(&block("tour-path"));
    // Echoed statements start a line; EXPLAIN's start with `EXPLAIN`.
    let expire =
        "\nALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5";
    let planned = metric_after(
        &out,
        &format!("{expire}, dry_run = 1);\n"),
        "deleted_manifest_lists_count",
    );
    let expired = metric_after(
        &out,
        &format!("{expire});\n"),
        "deleted_manifest_lists_count",
    );
    assert!(planned > 0, "the tour's expiry expires something:\n{out}");
    assert_eq!(planned, expired, "the dry run said what the run did");
    let orphans = "\nALTER TABLE events EXECUTE remove_orphan_files();\n";
    let data = metric_after(&out, orphans, "deleted_data_files_count");
    let manifests = metric_after(&out, orphans, "deleted_manifest_files_count");
    assert_eq!(data + manifests, 4, "the four generated orphans go:\n{out}");
    let rewritten = metric_after(
        &out,
        "\nOPTIMIZE TABLE events;\n",
        "rewritten_data_files_count",
    );
    assert!(rewritten > 1, "compaction rewrote the small files:\n{out}");
    // pyiceberg reads the table after all of it, every referenced file there.
    let metadata = newest_metadata(Path::new("/tmp/icetrim-tour/events/metadata"));
    let report = oracle_inspect(&metadata);
    assert_eq!(report["missing"], serde_json::json!([]), "{report}");
    // The REST tour on the same table, through the test REST catalog.
    let out = run(&block("tour-rest"));
    assert!(
        out.contains("ns.events"),
        "SHOW TABLES names the table:\n{out}"
    );
    let dry = "EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1, dry_run = 1);\n";
    let planned = metric_after(&out, dry, "dry_run");
    assert_eq!(planned, 1, "{out}");
    // The tag went through the catalog: the catalog's table lists it.
    assert!(out.contains("before_cleanup\ttag\t"), "{out}");
}
