//! Users and grants across runs of the `icetrim` binary: what `default` grants under `--path` is
//! there in the next run (the file is private), a user runs what it was granted and nothing else,
//! and a denied procedure changes nothing on the table.

use std::path::Path;
use std::process::{Command, Output};

use super::compaction_memory::generate;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

fn icetrim(data_path: Option<&Path>, user: &str, sql: &str) -> Output {
    let mut command = Command::new(BIN);
    if let Some(path) = data_path {
        command.arg("--path").arg(path);
    }
    command
        .args(["--user", user, "-q", sql])
        .output()
        .expect("icetrim runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table's metadata files, sorted.
fn metadata_files(table: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(table.join("metadata"))
        .expect("metadata folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const EXPIRE: &str =
    "ALTER TABLE t EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";

#[test]
fn grants_persist_across_runs_and_decide_who_runs_a_procedure() {
    let root = tempfile::tempdir().expect("temp dir");
    let table = root.path().join("t");
    generate(&table, 6, 10);
    let data = root.path().join("data");
    let setup = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}'); CREATE USER ops, viewer; \
         GRANT ALTER EXECUTE ON default.t TO ops; GRANT SELECT ON default.t TO viewer",
        table.display()
    );
    let out = icetrim(Some(&data), "default", &setup);
    assert!(out.status.success(), "{}", text(&out.stderr));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("access.json"))
            .expect("users and grants are kept under --path")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The grants of the first run decide in the second.
    let before = metadata_files(&table);
    let out = icetrim(Some(&data), "viewer", EXPIRE);
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr).trim_end(),
        "Code: 497. DB::Exception: viewer: Not enough privileges. To execute this query, it's \
         necessary to have the grant ALTER EXECUTE ON default.t. (ACCESS_DENIED)"
    );
    assert_eq!(
        metadata_files(&table),
        before,
        "a denied expiry wrote nothing"
    );
    let out = icetrim(Some(&data), "viewer", "SHOW TABLES; SHOW GRANTS");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "t\nGRANT SELECT ON default.t TO viewer\n"
    );

    let out = icetrim(Some(&data), "ops", EXPIRE);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_ne!(metadata_files(&table), before, "ops's expiry committed");
    let out = icetrim(Some(&data), "ops", "OPTIMIZE TABLE t");
    assert!(
        text(&out.stderr).contains("grant OPTIMIZE ON default.t"),
        "{}",
        text(&out.stderr)
    );

    // An unknown name is refused before anything runs.
    let out = icetrim(Some(&data), "ghost", "SHOW TABLES");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Code: 192"),
        "{}",
        text(&out.stderr)
    );

    // Revoked in one run, gone in the next.
    let out = icetrim(Some(&data), "default", "REVOKE ALL ON *.* FROM ops");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = icetrim(Some(&data), "ops", EXPIRE);
    assert!(
        text(&out.stderr).contains("Code: 497"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn without_a_path_users_live_for_the_run() {
    let out = icetrim(None, "default", "CREATE USER ops; SHOW USERS");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "default\nops\n");
    let out = icetrim(None, "ops", "SHOW TABLES");
    assert!(
        text(&out.stderr).contains("Code: 192"),
        "{}",
        text(&out.stderr)
    );
}
