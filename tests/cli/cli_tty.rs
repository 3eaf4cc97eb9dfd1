//! The interactive shell in a real pseudo-terminal: icetrim runs inside a tmux pane (a private tmux
//! server per test, a unique session name, killed at the end), keys are sent with `send-keys`, the
//! screen is read with `capture-pane`. Needs `tmux` (scripts/test-env.sh installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");
const TIMEOUT: Duration = Duration::from_secs(15);

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// icetrim in a tmux pane of its own tmux server (its socket inside the pane's temporary home,
/// so nothing is left behind).
pub(super) struct Pane {
    socket: PathBuf,
    target: String,
    home: tempfile::TempDir,
}

impl Pane {
    /// Starts the shell with `HOME` in a fresh temporary folder; `color` leaves `NO_COLOR` unset.
    fn start(color: bool) -> Pane {
        Pane::start_with(color, "")
    }

    /// [`start`](Self::start) with extra command-line `flags` (shell words).
    pub(super) fn start_with(color: bool, flags: &str) -> Pane {
        Pane::start_sized(color, flags, 160)
    }

    /// [`start_with`](Self::start_with) in a window `columns` wide. `COLUMNS` is taken out of the
    /// environment: the shell must ask the terminal.
    fn start_sized(color: bool, flags: &str, columns: usize) -> Pane {
        Pane::start_until(color, flags, columns, "icetrim (default) :) ")
    }

    /// Starts icetrim with `flags` (not necessarily the shell) and waits until `ready` shows.
    pub(super) fn start_until(color: bool, flags: &str, columns: usize, ready: &str) -> Pane {
        let id = format!(
            "icetrim-tty-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let home = tempfile::tempdir().expect("temp home");
        let no_color = if color { "" } else { "NO_COLOR=1" };
        let command = format!(
            "env -u NO_COLOR -u COLUMNS HOME='{}' TERM=xterm-256color {no_color} '{BIN}' {flags}; echo \"[exit $?]\"; sleep 60",
            home.path().display()
        );
        let pane = Pane {
            socket: home.path().join("tmux.sock"),
            target: id.clone(),
            home,
        };
        pane.tmux(&[
            "new-session",
            "-d",
            "-s",
            &id,
            "-x",
            &columns.to_string(),
            "-y",
            "50",
            "sh",
            "-c",
            &command,
        ]);
        pane.wait_for(ready, 1);
        pane
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs (install it: scripts/test-env.sh)");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Types `text` literally. A `;` ending a tmux argument would separate tmux commands, so a
    /// trailing `;` is sent as its key code.
    pub(super) fn type_text(&self, text: &str) {
        self.wait_for_empty_prompt();
        let (body, semicolon) = match text.strip_suffix(';') {
            Some(body) => (body, true),
            None => (text, false),
        };
        if !body.is_empty() {
            self.tmux(&["send-keys", "-t", &self.target, "-l", body]);
        }
        if semicolon {
            self.tmux(&["send-keys", "-t", &self.target, "-H", "3b"]);
        }
    }

    /// Presses named keys (`Enter`, `Up`, `C-c`, `C-d`).
    pub(super) fn press(&self, key: &str) {
        self.tmux(&["send-keys", "-t", &self.target, key]);
    }

    /// Types a line and presses Enter.
    pub(super) fn line(&self, text: &str) {
        self.type_text(text);
        self.press("Enter");
    }

    /// The whole pane, scroll-back included, with colour escapes when `escapes`.
    pub(super) fn screen(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-J", "-S", "-", "-t", &self.target];
        if escapes {
            args.push("-e");
        }
        self.tmux(&args)
    }

    /// Waits until `needle` is on the screen `times` times; returns the screen.
    pub(super) fn wait_for(&self, needle: &str, times: usize) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen(false);
            if screen.matches(needle).count() >= times {
                return screen;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "waited for {times} x {needle:?}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the shell shows an empty prompt (rustyline may drop keys typed before it reads
    /// the line: it asks the terminal for the cursor position first).
    pub(super) fn wait_for_empty_prompt(&self) {
        let started = Instant::now();
        loop {
            let screen = self.screen(false);
            let last = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim_end();
            if last.ends_with(":)") || last.ends_with(":-]") {
                return;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "no empty prompt; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Copies everything the pane prints from now on (cleared lines included) to a file.
    fn record(&self) -> PathBuf {
        let log = self.home().join("pane.log");
        self.tmux(&[
            "pipe-pane",
            "-t",
            &self.target,
            &format!("cat >> '{}'", log.display()),
        ]);
        log
    }

    pub(super) fn home(&self) -> &Path {
        self.home.path()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

#[test]
fn multi_line_statements_run_at_the_semicolon() {
    let pane = Pane::start(false);
    pane.line("CREATE TABLE db2.t");
    pane.wait_for(":-] ", 1);
    pane.line("  ENGINE = IcebergLocal('/tmp/x')");
    pane.wait_for(":-] ", 2);
    let screen = pane.screen(false);
    assert!(
        !screen.contains("Ok."),
        "nothing ran before the ';':\n{screen}"
    );
    pane.line(";");
    pane.wait_for("0 rows in set. Elapsed: ", 1);
    pane.line("USE db2;");
    pane.wait_for("icetrim (db2) :) ", 1);
    pane.line("SHOW TABLES;");
    let screen = pane.wait_for("1 row in set. Elapsed: ", 1);
    assert!(
        screen.contains("   ┌─name─┐\n1. │ t    │\n   └──────┘\n"),
        "{screen}"
    );
    assert!(
        screen.contains("Ok.\n\n0 rows in set. Elapsed: 0.0"),
        "{screen}"
    );
}

#[test]
fn format_clause_and_two_statements_on_one_line() {
    let pane = Pane::start(false);
    pane.line("CREATE TABLE a ENGINE = IcebergLocal('/a'); SHOW TABLES FORMAT JSONEachRow;");
    let screen = pane.wait_for("1 row in set.", 1);
    assert!(screen.contains("{\"name\":\"a\"}"), "{screen}");
}

#[test]
fn up_arrow_recalls_history_and_the_history_file_keeps_it() {
    let pane = Pane::start(false);
    pane.line("CREATE TABLE h ENGINE = IcebergLocal('/h');");
    pane.wait_for("0 rows in set.", 1);
    pane.line("SHOW TABLES FORMAT CSV;");
    pane.wait_for("\"h\"", 1);
    pane.wait_for_empty_prompt();
    pane.press("Up");
    pane.press("Enter");
    pane.wait_for("\"h\"", 2);
    let history =
        std::fs::read_to_string(pane.home().join(".icetrim_history")).expect("history file");
    assert!(history.contains("SHOW TABLES FORMAT CSV;"), "{history}");
    assert!(history.contains("CREATE TABLE h"), "{history}");
}

/// The history file never keeps a secret: engine arguments are masked as SHOW CREATE TABLE masks
/// them, and a URL with credentials in it (which CREATE refuses) loses them.
#[test]
fn history_file_masks_secrets() {
    let pane = Pane::start(false);
    pane.line("CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'AKIAKEY', 'S3CR3T-KEY', 'T0K3N');");
    pane.wait_for("0 rows in set.", 1);
    pane.line("CREATE TABLE u ENGINE = IcebergS3('http://AKIAKEY:URL-S3CR3T@127.0.0.1:9/b/t/');");
    pane.wait_for_empty_prompt();
    pane.line(
        "CREATE TABLE az ENGINE = IcebergAzure('DefaultEndpointsProtocol=https;AccountName=acc;\
         AccountKey=QUJDS0VZ;', 'c', 't/', 'acc', 'QUJDS0VZMg==');",
    );
    pane.wait_for("0 rows in set.", 2);
    pane.line("SHOW TABLES;");
    pane.wait_for("az", 1);
    pane.wait_for_empty_prompt();
    let history =
        std::fs::read_to_string(pane.home().join(".icetrim_history")).expect("history file");
    for secret in ["S3CR3T-KEY", "T0K3N", "URL-S3CR3T", "QUJDS0VZ"] {
        assert!(!history.contains(secret), "{secret} kept: {history}");
    }
    assert!(
        history.contains(
            "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'AKIAKEY', '[HIDDEN]', '[HIDDEN]');"
        ),
        "{history}"
    );
    assert!(history.contains("SHOW TABLES;"), "{history}");
}

#[test]
fn ctrl_c_drops_the_half_typed_statement() {
    let pane = Pane::start(false);
    pane.type_text("SHOW TAB");
    pane.wait_for("SHOW TAB", 1);
    pane.press("C-c");
    // Keys typed before the new prompt would be read together with the Ctrl-C and dropped too.
    pane.wait_for("icetrim (default) :) ", 2);
    pane.line("CREATE TABLE c ENGINE = IcebergLocal('/c')");
    pane.wait_for(":-] ", 1);
    pane.press("C-c");
    pane.wait_for("icetrim (default) :) ", 3);
    pane.line("SHOW TABLES FORMAT CSV;");
    let screen = pane.wait_for("0 rows in set.", 1);
    assert!(!screen.contains("Code:"), "{screen}");
    assert!(
        !screen.contains("\"c\""),
        "the cancelled CREATE did not run:\n{screen}"
    );
}

#[test]
fn errors_are_shown_in_red_and_the_shell_goes_on() {
    let pane = Pane::start(true);
    pane.line("USE nodb;");
    pane.wait_for("(UNKNOWN_DATABASE)", 1);
    let coloured = pane.screen(true);
    assert!(
        coloured.contains(
            "\u{1b}[31mCode: 81. DB::Exception: Database nodb does not exist. (UNKNOWN_DATABASE)"
        ),
        "{coloured:?}"
    );
    pane.line("SET nope = 1;");
    pane.wait_for(
        "Code: 115. DB::Exception: Unknown setting 'nope'. (UNKNOWN_SETTING)",
        1,
    );
    pane.wait_for("icetrim (default) :) ", 3);
}

/// A statement's warnings are shown before its `Ok.` (here `iceberg_format_version`'s, which has
/// no effect on an existing table).
#[test]
fn warnings_are_shown_before_ok() {
    let pane = Pane::start(false);
    pane.line(
        "CREATE TABLE t ENGINE = IcebergLocal('/tmp/x') SETTINGS iceberg_format_version = 2;",
    );
    let screen = pane.wait_for("0 rows in set.", 1);
    let warning = screen
        .find("Warning: Setting iceberg_format_version = 2 has no effect on an existing table")
        .unwrap_or_else(|| panic!("no warning shown:\n{screen}"));
    let ok = screen.find("Ok.").expect("Ok. is shown");
    assert!(warning < ok, "the warning comes first:\n{screen}");
}

#[test]
fn no_color_keeps_errors_plain() {
    let pane = Pane::start(false);
    pane.line("USE nodb;");
    pane.wait_for("(UNKNOWN_DATABASE)", 1);
    assert!(!pane.screen(true).contains("\u{1b}[31m"));
}

#[test]
fn exit_and_ctrl_d_leave_with_bye() {
    let pane = Pane::start(false);
    pane.line("exit");
    let screen = pane.wait_for("[exit 0]", 1);
    assert!(screen.contains("Bye.\n[exit 0]"), "{screen}");
    let pane = Pane::start(false);
    pane.wait_for_empty_prompt();
    pane.press("C-d");
    let screen = pane.wait_for("[exit 0]", 1);
    assert!(screen.contains("Bye."), "{screen}");
}

/// The pane log once it holds `needle` (the pipe may lag behind the screen).
fn logged_until(log: &Path, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "{needle:?} never logged:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A generated table of `snapshots` snapshots (300: several progress redraws).
fn generated_table(dir: &Path, snapshots: usize) -> String {
    let location = dir.join("big").display().to_string();
    let snapshots = snapshots.to_string();
    let status = Command::new(env!("CARGO_BIN_EXE_icetrim-generate"))
        .args([
            "--location",
            &location,
            "--format-version",
            "2",
            "--snapshots",
            &snapshots,
        ])
        .args([
            "--files-per-snapshot",
            "20",
            "--seed",
            "5",
            "--no-data-files",
        ])
        .output()
        .expect("icetrim-generate runs");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    location
}

#[test]
fn progress_bars_name_the_phases_and_are_cleared_before_the_result() {
    let pane = Pane::start(false);
    let location = generated_table(pane.home(), 300);
    let log = pane.record();
    pane.line(&format!(
        "CREATE TABLE big ENGINE = IcebergLocal('{location}');"
    ));
    pane.wait_for("0 rows in set.", 1);
    pane.line("ALTER TABLE big EXECUTE remove_orphan_files(dry_run = 1);");
    let screen = pane.wait_for("rows in set.", 2);
    let drawn = logged_until(&log, "deleted_data_files_count");
    for phase in [
        "reading manifest lists [",
        "reading manifests [",
        "listing files ",
    ] {
        assert!(drawn.contains(phase), "no '{phase}' bar drawn:\n{drawn}");
    }
    assert!(
        drawn.contains("300/300 files"),
        "the lists' bar reaches its total:\n{drawn}"
    );
    assert!(drawn.contains("\x1b[2K"), "bars are cleared:\n{drawn}");
    for phase in ["reading manifest", "listing files"] {
        assert!(
            !screen.contains(phase),
            "a bar is left on screen:\n{screen}"
        );
    }
    assert!(screen.contains("deleted_data_files_count"), "{screen}");
}

/// In a 40-column window, with no `COLUMNS` in the environment, every bar line is cut to 39
/// characters (the width comes from the terminal; it was `COLUMNS` or 80, and the line wrapped).
#[test]
fn progress_bar_fits_a_narrow_terminal() {
    let pane = Pane::start_sized(false, "", 40);
    let location = generated_table(pane.home(), 300);
    let log = pane.record();
    pane.line(&format!(
        "CREATE TABLE big ENGINE = IcebergLocal('{location}');"
    ));
    pane.wait_for("0 rows in set.", 1);
    pane.line("ALTER TABLE big EXECUTE remove_orphan_files(dry_run = 1);");
    pane.wait_for("rows in set.", 2);
    let drawn = logged_until(&log, "deleted_data_files_count");
    // Each bar is drawn as `\r\x1b[2K<line>`; the line ends where the next escape or return starts.
    let bars: Vec<&str> = drawn
        .split("\r\x1b[2K")
        .skip(1)
        .filter_map(|piece| piece.split(['\r', '\n', '\x1b']).next())
        .filter(|line| line.starts_with("reading manifest") || line.starts_with("listing files"))
        .collect();
    assert!(
        bars.iter().any(|bar| bar.starts_with("reading manifests")),
        "no bar drawn:\n{drawn:?}"
    );
    for bar in &bars {
        assert!(
            bar.chars().count() < 40,
            "{bar:?} is wider than the 40-column window"
        );
    }
}

#[test]
fn no_progress_draws_nothing() {
    let pane = Pane::start_with(false, "--no-progress");
    let location = generated_table(pane.home(), 300);
    let log = pane.record();
    pane.line(&format!(
        "CREATE TABLE big ENGINE = IcebergLocal('{location}');"
    ));
    pane.wait_for("0 rows in set.", 1);
    pane.line("ALTER TABLE big EXECUTE remove_orphan_files(dry_run = 1);");
    pane.wait_for("rows in set.", 2);
    let drawn = logged_until(&log, "deleted_data_files_count");
    assert!(!drawn.contains("reading manifest"), "{drawn}");
}

#[test]
fn ctrl_c_cancels_a_running_procedure() {
    // Ctrl-C lands while the expiry reads (then nothing is written) or, on a fast or loaded
    // machine, once it has committed (then the commit stands, the remaining deletes are skipped
    // and the next run finishes them). Both are checked; which one happened is on the screen.
    let pane = Pane::start(false);
    let location = generated_table(pane.home(), 800);
    let metadata = Path::new(&location).join("metadata");
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(&metadata)
            .expect("metadata dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    };
    let before = listing();
    pane.line(&format!(
        "CREATE TABLE big ENGINE = IcebergLocal('{location}');"
    ));
    pane.wait_for("0 rows in set.", 1);
    pane.line(
        "ALTER TABLE big EXECUTE expire_snapshots(retain_last = 1, retention_period = '0s');",
    );
    pane.wait_for("reading manifest", 1);
    pane.press("C-c");
    let screen = pane.wait_for("cancelled", 1);
    pane.wait_for("icetrim (default) :) ", 3);
    let screen = if screen.contains("Query was cancelled.") {
        screen
    } else {
        pane.screen(false)
    };
    if screen.contains("cancelled after it started writing") {
        // The commit stands; a second run finishes the skipped deletes and expires nothing more.
        let versions = |names: &[String]| {
            names
                .iter()
                .filter(|n| n.ends_with(".metadata.json"))
                .count()
        };
        assert_eq!(
            versions(&listing()),
            versions(&before) + 1,
            "the commit stands"
        );
        pane.line(
            "ALTER TABLE big EXECUTE expire_snapshots(retain_last = 1, retention_period = '0s');",
        );
        pane.wait_for("interrupted expire_snapshots", 1);
    } else {
        assert!(screen.contains("Query was cancelled."), "{screen}");
        assert!(!screen.contains("deleted_data_files_count"), "{screen}");
        assert_eq!(listing(), before, "nothing was written or deleted");
    }
    pane.line("SHOW TABLES FORMAT CSV;");
    pane.wait_for("\"big\"", 1);
}
