//! clickhouse-client habits in the interactive shell, in a real pseudo-terminal (tmux, as in
//! `cli_tty`): `\G`, `help` / `\?`, `\q`, Tab completion, and `-q` printing PrettyCompact on a
//! terminal.

use super::cli_tty::Pane;

#[test]
fn backslash_g_prints_vertical_also_inside_a_line() {
    let pane = Pane::start_with(false, "");
    pane.line("SHOW DATABASES\\G");
    let screen = pane.wait_for("1 row in set", 1);
    assert!(
        screen.contains("Row 1:\n──────\nname: default\n"),
        "{screen}"
    );
    pane.line("SHOW DATABASES\\G SHOW DATABASES;");
    let screen = pane.wait_for("1 row in set", 3);
    assert_eq!(screen.matches("name: default").count(), 2, "{screen}");
    assert!(
        screen.contains("┌─name────┐"),
        "the second one is PrettyCompact: {screen}"
    );
}

#[test]
fn help_and_backslash_commands() {
    let pane = Pane::start_with(false, "");
    pane.line("help");
    pane.wait_for("Tab completes keywords", 1);
    pane.line("\\?");
    pane.wait_for("Tab completes keywords", 2);
    pane.line("\\q");
    let screen = pane.wait_for("[exit 0]", 1);
    assert!(screen.contains("Bye.\n[exit 0]"), "{screen}");
    for word in ["quit", "logout", "q"] {
        let pane = Pane::start_with(false, "");
        pane.line(word);
        pane.wait_for("[exit 0]", 1);
    }
}

/// The line being edited (the last prompt line on the screen).
fn edited_line(pane: &Pane) -> String {
    let screen = pane.screen(false);
    screen
        .lines()
        .rev()
        .find(|l| l.contains(":) "))
        .unwrap_or("")
        .to_string()
}

/// Tab completes a procedure, its argument, a system table, a column, a registered table and a
/// setting.
#[test]
fn tab_completes_names_the_session_knows() {
    let pane = Pane::start_with(false, "");
    pane.line("CREATE TABLE events_table ENGINE = IcebergLocal('/tmp/icetrim-nowhere');");
    pane.wait_for("Ok.", 1);
    let cases = [
        ("ALTER TABLE events_t", "ALTER TABLE events_table"),
        (
            "ALTER TABLE events_table EXECUTE expire_sn",
            "EXECUTE expire_snapshots",
        ),
        (
            "ALTER TABLE t EXECUTE expire_snapshots(retain_l",
            "(retain_last",
        ),
        (
            "SELECT * FROM system.iceberg_ref",
            "FROM system.iceberg_refs",
        ),
        ("SELECT max_ref_a", "SELECT max_ref_age_ms"),
        (
            "SET output_format_pretty_fallback_to_vertical_max",
            "_max_rows_per_chunk",
        ),
        ("sho", "show"),
    ];
    for (typed, completed) in cases {
        pane.type_text(typed);
        pane.press("Tab");
        let started = std::time::Instant::now();
        while !edited_line(&pane).contains(completed) {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "{typed:?} did not complete to {completed:?}: {}",
                pane.screen(false)
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        pane.press("C-c");
    }
}

/// `-q` with standard output on a terminal prints PrettyCompact, as clickhouse-client does.
#[test]
fn query_on_a_terminal_prints_pretty_compact() {
    let pane = Pane::start_until(false, "-q 'SHOW DATABASES'", 120, "[exit 0]");
    let screen = pane.screen(false);
    assert!(
        screen.contains("   ┌─name────┐\n1. │ default │\n   └─────────┘"),
        "{screen}"
    );
}

/// In the shell too, a procedure whose planned deletes partly failed prints its rows, then
/// `CANNOT_UNLINK`; the shell goes on.
#[test]
fn failed_deletions_are_an_error_in_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let location = super::cli_habits::generated_table(dir.path());
    let (data, strays) = super::cli_habits::stray_files(&location);
    let undo = super::cli_habits::undeletable(&data, &strays[..1]);
    let pane = Pane::start_with(false, "--no-progress");
    pane.line(&format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{location}');"
    ));
    pane.wait_for("Ok.", 1);
    pane.line("ALTER TABLE t EXECUTE remove_orphan_files();");
    let screen = pane.wait_for("(CANNOT_UNLINK)", 1);
    drop(undo);
    let rows = screen
        .find("failed_deletions_count")
        .expect("the rows print");
    let error = screen
        .find("Code: 458. DB::Exception: 1 of the planned deletions failed")
        .expect("the error");
    assert!(rows < error, "rows first, then the error: {screen}");
    pane.line("SHOW TABLES;");
    pane.wait_for("1 row in set", 1);
}
