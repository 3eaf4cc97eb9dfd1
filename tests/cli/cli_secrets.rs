//! No secret carried by a URL reaches anything the `icetrim` binary prints or keeps: a marker
//! goes through every URL-bearing engine argument and database setting (the catalog URL's query,
//! fragment and userinfo, `oauth_server_uri`, `storage_endpoint`, an `IcebergS3` URL's presigned
//! query and userinfo, an `IcebergAzure` URL's SAS query and fragment, a connection string's
//! `SharedAccessSignature`, `AccountKey` and `BlobEndpoint`), in statements that are refused and
//! in statements that succeed (on azurite, with a real SAS token), and is looked for in standard
//! output and error (errors, warnings, `SHOW CREATE`, `EXPLAIN`, the system tables, the
//! maintenance log of a failed `SYSTEM MAINTAIN`), in the interactive shell's history file and in
//! the `--path` files (with the maintenance log's JSON lines and metrics files put there too).
//!
//! A secret icetrim refuses is kept nowhere. A secret it uses (a SAS token, an account key) is
//! kept in the table's definition file under `--path` (mode 0600, the credential store that lets
//! a later run reach the table, as for keys given as engine arguments) and nowhere else.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::AZURE_EMULATOR_KEY;

use super::cli_tty::Pane;
use crate::support as common;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

/// Put only in statements icetrim refuses.
const REFUSED: &str = "R3FUSEDMARK";
/// The signature of a SAS token that is stored and used (azurite refuses it).
const FORGED: &str = "F0RGEDMARK";

/// The statements: `(sql, expected)` where `expected` is a text standard output or error must
/// show for it (an error code, or a masked `SHOW CREATE`).
fn statements(folder: &str, sas: &str) -> Vec<(String, String)> {
    let rest = common::emulator_var("ICETRIM_REST_URI");
    let s3 = common::emulator_var("ICETRIM_S3_ENDPOINT");
    let bucket = common::emulator_var("ICETRIM_S3_BUCKET");
    let az = common::emulator_var("ICETRIM_AZURE_ENDPOINT");
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let forged = format!("sv=2021-06-08&ss=b&srt=sco&sp=rl&se=2099-01-01&sig={FORGED}");
    let rest_db = |url: &str, settings: &str| {
        format!(
            "CREATE DATABASE lake ENGINE = DataLakeCatalog('{url}') SETTINGS catalog_type = \
             'rest', warehouse = 'w'{settings};"
        )
    };
    let refused = "(BAD_ARGUMENTS)".to_string();
    let expire = "EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";
    let mut all = vec![
        // Refused: a secret in a catalog URL or a URL setting.
        (
            rest_db(&format!("{rest}/v1?token={REFUSED}"), ""),
            refused.clone(),
        ),
        (
            rest_db(&format!("{rest}/api/v1?api_key={REFUSED}"), ""),
            refused.clone(),
        ),
        (
            rest_db(&format!("{rest}/v1#{REFUSED}"), ""),
            refused.clone(),
        ),
        (
            rest_db(&format!("http://u:{REFUSED}@127.0.0.1:1/v1"), ""),
            refused.clone(),
        ),
        (
            rest_db(
                &format!("{rest}/v1"),
                &format!(
                    ", catalog_credential = 'id:x', oauth_server_uri = '{rest}/t?s={REFUSED}'"
                ),
            ),
            refused.clone(),
        ),
        (
            rest_db(
                &format!("{rest}/v1"),
                &format!(", storage_endpoint = 'http://k:{REFUSED}@127.0.0.1:1'"),
            ),
            refused.clone(),
        ),
        (
            rest_db(
                &format!("{rest}/v1"),
                &format!(", storage_endpoint = '{s3}/b?X-Amz-Signature={REFUSED}'"),
            ),
            refused.clone(),
        ),
        // Refused: a secret in a table URL.
        (
            format!(
                "CREATE TABLE s1 ENGINE = IcebergS3('{s3}/{bucket}/t?X-Amz-Credential={REFUSED}\
                 &X-Amz-Signature={REFUSED}');"
            ),
            refused.clone(),
        ),
        (
            format!("CREATE TABLE s2 ENGINE = IcebergS3('http://AK:{REFUSED}@127.0.0.1:1/b/t');"),
            refused.clone(),
        ),
        (
            format!("CREATE TABLE s3 ENGINE = IcebergS3('s3://{bucket}/t?{REFUSED}', NOSIGN);"),
            refused.clone(),
        ),
        (
            format!("CREATE TABLE a1 ENGINE = IcebergAzure('{az}?{sas}#{REFUSED}', 'c', 't');"),
            refused.clone(),
        ),
        (
            format!(
                "CREATE TABLE a2 ENGINE = IcebergAzure('AccountName=a;BlobEndpoint=\
                 http://u:{REFUSED}@127.0.0.1:1/a', 'c', 't');"
            ),
            refused.clone(),
        ),
    ];
    let conn = |secret: &str| {
        format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;BlobEndpoint={az};{secret}"
        )
    };
    all.extend([
        // Used: a real SAS token in the account URL.
        (
            format!("CREATE TABLE az ENGINE = IcebergAzure('{az}?{sas}', '{container}', '{folder}');"),
            String::new(),
        ),
        ("SHOW CREATE TABLE az;".to_string(), format!("IcebergAzure(\\'{az}?[HIDDEN]\\'")),
        (
            "SELECT snapshot_id, manifest_list FROM system.iceberg_snapshots WHERE table = 'az';"
                .to_string(),
            "snap-".to_string(),
        ),
        (format!("EXPLAIN ALTER TABLE az {expire};"), "manifest_list".to_string()),
        (format!("ALTER TABLE az {expire};"), "deleted_manifest_lists_count".to_string()),
        // Used: a SAS token and an account key in connection strings.
        (
            format!(
                "CREATE TABLE azc ENGINE = IcebergAzure('{}', '{container}', '{folder}');",
                conn(&format!("SharedAccessSignature={sas}"))
            ),
            String::new(),
        ),
        ("SHOW CREATE TABLE azc;".to_string(), "SharedAccessSignature=[HIDDEN]".to_string()),
        (
            "SELECT name, type FROM system.iceberg_refs WHERE table = 'azc';".to_string(),
            "main".to_string(),
        ),
        (
            format!(
                "CREATE TABLE azk ENGINE = IcebergAzure('{}', '{container}', '{folder}');",
                conn(&format!("AccountKey={AZURE_EMULATOR_KEY}"))
            ),
            String::new(),
        ),
        ("SHOW CREATE TABLE azk;".to_string(), "AccountKey=[HIDDEN]".to_string()),
        // Used but refused by azurite: every statement that reaches storage fails.
        (
            format!("CREATE TABLE bad ENGINE = IcebergAzure('{az}?{forged}', '{container}', '{folder}');"),
            String::new(),
        ),
        ("SHOW CREATE TABLE bad;".to_string(), format!("IcebergAzure(\\'{az}?[HIDDEN]\\'")),
        (format!("EXPLAIN ALTER TABLE bad {expire};"), "(AZURE_BLOB_STORAGE_ERROR)".to_string()),
        (
            "SELECT snapshot_id FROM system.iceberg_snapshots WHERE table = 'bad';".to_string(),
            "(AZURE_BLOB_STORAGE_ERROR)".to_string(),
        ),
        (
            "ALTER TABLE bad EXECUTE remove_orphan_files(dry_run = 1);".to_string(),
            "(AZURE_BLOB_STORAGE_ERROR)".to_string(),
        ),
        // A maintenance run that fails on storage: its log row keeps the error, not the SAS.
        (
            "SYSTEM MAINTAIN TABLE bad;".to_string(),
            "(AZURE_BLOB_STORAGE_ERROR)".to_string(),
        ),
        (
            "SELECT procedure, status, error_code, error FROM system.iceberg_maintenance_log \
             WHERE table = 'bad';"
                .to_string(),
            "failed\tAZURE_BLOB_STORAGE_ERROR".to_string(),
        ),
    ]);
    all
}

/// A generated table on azurite (written with the account key): its folder below the container.
async fn azure_table() -> String {
    let (io, root) = common::azure_emulator("cli-secrets");
    let now = chrono::Utc::now().timestamp_millis();
    let options = GenerateOptions::new(&root, FormatVersion::V2, 5, 1, 3, now);
    generate(&io, &options).await.expect("generate on azurite");
    root.rsplit('/').next().expect("a folder").to_string()
}

/// Every file under `dir`, with its text.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).expect("readable folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let text =
                    String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
                out.push((path, text));
            }
        }
    }
    out
}

/// Asserts no `secrets` in `text` (`what` names it).
fn assert_absent(what: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!text.contains(secret), "{secret} found in {what}:\n{text}");
    }
}

/// The `--path` folder: a refused secret in no file; a used one only in the definition files of
/// the tables that use it, which are private (0600).
fn check_path_files(dir: &Path, refused: &[&str], used: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    let files = files_under(dir);
    assert!(!files.is_empty(), "nothing under {}", dir.display());
    for (path, text) in &files {
        assert_absent(&path.display().to_string(), text, refused);
        if used.iter().any(|secret| text.contains(secret)) {
            let mode = std::fs::metadata(path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", path.display());
            assert!(path.starts_with(dir.join("tables")), "{}", path.display());
        }
    }
}

/// The secrets of a real SAS token: its signature (as written, percent-encoded).
fn signature(sas: &str) -> String {
    sas.split("sig=").nth(1).expect("a signature").to_string()
}

/// Script mode (`icetrim --ignore-error --path <dir>`, statements piped in): standard output and
/// error (each error's statement line too) hold every expected result and error, and no secret;
/// with `--echo`, the echoed statements hold none either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_url_secret_in_output_errors_or_path_files() {
    let folder = azure_table().await;
    let sas = common::azurite_account_sas(2);
    let sig = signature(&sas);
    let path = tempfile::tempdir().expect("tempdir");
    let script: Vec<(String, String)> = statements(&folder, &sas);
    let input: String = script.iter().map(|(sql, _)| format!("{sql}\n")).collect();
    let shipped = path.path().join("maintenance.jsonl");
    let metrics = path.path().join("icetrim.prom");
    let output = run(
        &[
            "--ignore-error",
            "--path",
            path.path().to_str().expect("UTF-8"),
            "--maintenance-log-file",
            shipped.to_str().expect("UTF-8"),
            "--metrics-file",
            metrics.to_str().expect("UTF-8"),
        ],
        &input,
    );
    assert!(
        shipped.exists() && metrics.exists(),
        "the log files are written"
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for (sql, expected) in &script {
        let shown = format!("{stdout}\n{stderr}");
        assert!(
            shown.contains(expected.as_str()),
            "{sql}: no {expected}:\n{shown}"
        );
    }
    // Each refused statement failed with its own error; the used tables were created.
    let refused = script
        .iter()
        .filter(|(_, e)| e == "(BAD_ARGUMENTS)")
        .count();
    assert_eq!(
        stderr.matches("(BAD_ARGUMENTS)").count(),
        refused,
        "{stderr}"
    );
    // SYSTEM MAINTAIN's error quotes the failed table's error: two for it.
    assert_eq!(
        stderr.matches("(AZURE_BLOB_STORAGE_ERROR)").count(),
        5,
        "{stderr}"
    );
    assert!(stderr.contains("?[HIDDEN]"), "{stderr}");
    let secrets = [REFUSED, FORGED, sig.as_str(), AZURE_EMULATOR_KEY];
    assert_absent("standard output", &stdout, &secrets);
    assert_absent("standard error", &stderr, &secrets);
    let echoed = run(&["--ignore-error", "--echo"], &input);
    let echoed_out = String::from_utf8_lossy(&echoed.stdout);
    assert!(echoed_out.contains("[HIDDEN]"), "{echoed_out}");
    assert_absent("echoed statements", &echoed_out, &secrets);
    assert_absent(
        "standard error with --echo",
        &String::from_utf8_lossy(&echoed.stderr),
        &secrets,
    );
    check_path_files(
        path.path(),
        &[REFUSED],
        &[FORGED, sig.as_str(), AZURE_EMULATOR_KEY],
    );
}

/// The interactive shell: the same statements typed at the prompt leave no secret in the history
/// file (the screen echoes what was typed, so it is not searched; script mode covers output).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_url_secret_in_the_history_file() {
    let folder = azure_table().await;
    let sas = common::azurite_account_sas(2);
    let sig = signature(&sas);
    let path = tempfile::tempdir().expect("tempdir");
    let flags = format!("--no-progress --path '{}'", path.path().display());
    let pane = Pane::start_with(false, &flags);
    let script = statements(&folder, &sas);
    for (done, (sql, _)) in script.iter().enumerate() {
        pane.line(sql);
        wait_for_answers(&pane, done + 1);
    }
    let history = std::fs::read_to_string(pane.home().join(".icetrim_history")).expect("history");
    let kept = history.lines().filter(|l| !l.starts_with("#V")).count();
    assert_eq!(kept, script.len(), "every statement kept:\n{history}");
    assert_absent(
        "the history file",
        &history,
        &[REFUSED, FORGED, sig.as_str(), AZURE_EMULATOR_KEY],
    );
    for shown in [
        "?[HIDDEN]",
        "#[HIDDEN]",
        "http://[HIDDEN]@",
        "SharedAccessSignature=[HIDDEN]",
    ] {
        assert!(history.contains(shown), "{shown}:\n{history}");
    }
    check_path_files(
        path.path(),
        &[REFUSED],
        &[FORGED, sig.as_str(), AZURE_EMULATOR_KEY],
    );
}

/// Waits until the shell answered `count` statements (each prints its elapsed time or an error):
/// typing on before an answer could lose keys.
fn wait_for_answers(pane: &Pane, count: usize) {
    let started = std::time::Instant::now();
    loop {
        let screen = pane.screen(false);
        if screen.matches("Elapsed: ").count() + screen.matches("DB::Exception").count() >= count {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{count} answers awaited:\n{screen}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs icetrim with `args`, `stdin` piped in.
fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("script written");
    child.wait_with_output().expect("icetrim finishes")
}
