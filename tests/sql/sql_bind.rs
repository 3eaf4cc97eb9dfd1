//! Binding `EXECUTE` arguments: typed options for good input, ClickHouse 26.9's exact messages for
//! bad input (each message below was observed with chdb 4.4 / ClickHouse 26.9.2.1).

use icetrim::Settings;
use icetrim::internals::engine::check_gates;
use icetrim::internals::plan::{
    ExpireOptions, OrphanOptions, ProcedureCall, RewriteManifestsOptions,
};
use icetrim::internals::sql::{BindContext, SessionTimeZone, Statement, bind, parse_statement};
use icetrim::{Error, ErrorKind, Result};

/// 2026-01-01 00:00:00 UTC.
const NOW_MS: i64 = 1_767_225_600_000;

fn context() -> BindContext {
    BindContext {
        now_ms: NOW_MS,
        time_zone: SessionTimeZone::Named(chrono_tz::UTC),
        limits: Default::default(),
    }
}

/// Parses `ALTER TABLE t EXECUTE <call>` and binds it.
fn bind_call(call: &str) -> Result<ProcedureCall> {
    let sql = format!("ALTER TABLE t EXECUTE {call}");
    let Statement::AlterExecute(alter) = parse_statement(&sql)? else {
        panic!("{sql} is not an ALTER");
    };
    bind(&alter.procedure, &alter.args, &context())
}

fn expire(call: &str) -> ExpireOptions {
    match bind_call(call) {
        Ok(ProcedureCall::Expire(options)) => options,
        other => panic!("{call}: {other:?}"),
    }
}

fn orphans(call: &str) -> OrphanOptions {
    match bind_call(call) {
        Ok(ProcedureCall::Orphans(options)) => options,
        other => panic!("{call}: {other:?}"),
    }
}

fn error(call: &str) -> Error {
    match bind_call(call) {
        Ok(options) => panic!("{call} bound to {options:?}"),
        Err(e) => e,
    }
}

/// Each call must fail as BAD_ARGUMENTS with exactly this message (ClickHouse's), followed at
/// most by icetrim's hint (`. Maybe you meant: [...]`, `. Accepted forms: ...`).
fn assert_bad_arguments(cases: &[(&str, &str)]) {
    for (call, message) in cases {
        let e = error(call);
        assert_eq!(e.kind(), ErrorKind::BadArguments, "{call}: {e}");
        let hint = e.message().strip_prefix(*message);
        let hint_only = hint.is_some_and(|rest| {
            rest.is_empty()
                || rest.starts_with(". Maybe you meant: [")
                || rest.starts_with(". Accepted forms: ")
        });
        assert!(hint_only, "{call}: {:?} is not {message:?}", e.message());
    }
}

#[test]
fn expire_binds_every_argument() {
    let options = expire(
        "expire_snapshots('2024-06-01 00:00:00', retention_period = '1d12h30m', retain_last = 10, \
         dry_run = 1)",
    );
    assert_eq!(
        options,
        ExpireOptions {
            expire_before_ms: Some(1_717_200_000_000),
            retention_period_ms: Some(131_400_000),
            retain_last: Some(10),
            snapshot_ids: None,
            dry_run: true,
            clean_expired_metadata: false,
        }
    );
    let options = expire("expire_snapshots(snapshot_ids = [1, -2, 9223372036854775807])");
    assert_eq!(options.snapshot_ids, Some(vec![1, -2, i64::MAX]));
    assert!(!options.dry_run);
    assert_eq!(expire("expire_snapshots()"), ExpireOptions::default());
    assert_eq!(
        expire("expire_snapshots(snapshot_ids = [])").snapshot_ids,
        Some(vec![])
    );
    assert_eq!(
        expire("expire_snapshots(retain_last = 2147483647)").retain_last,
        Some(i32::MAX)
    );
    assert_eq!(
        expire("expire_snapshots(expire_before => '1717200000')").expire_before_ms,
        Some(1_717_200_000_000)
    );
}

#[test]
fn expire_dry_run_forms() {
    for (value, expected) in [
        ("1", true),
        ("0", false),
        ("2", true),
        ("-1", true),
        ("true", true),
        ("false", false),
        ("'true'", true),
        ("'TRUE'", true),
        ("'false'", false),
    ] {
        let options = expire(&format!("expire_snapshots(dry_run = {value})"));
        assert_eq!(options.dry_run, expected, "{value}");
    }
    for value in [
        "'0'", "'1'", "'yes'", "''", "NULL", "[1]", "0.0", "1.5", "'x'",
    ] {
        let e = error(&format!("expire_snapshots(dry_run = {value})"));
        assert_eq!(
            e.message(),
            "expire_snapshots expects 'dry_run' to be a boolean or integer literal",
            "{value}"
        );
    }
}

#[test]
fn retention_period_messages() {
    assert_bad_arguments(&[
        (
            "expire_snapshots(retention_period = '3x')",
            "expire_snapshots: invalid duration '3x' for 'retention_period'",
        ),
        (
            "expire_snapshots(retention_period = 'd')",
            "expire_snapshots: invalid duration 'd' for 'retention_period'",
        ),
        (
            "expire_snapshots(retention_period = '3 d')",
            "expire_snapshots: invalid duration '3 d' for 'retention_period'",
        ),
        (
            "expire_snapshots(retention_period = '3D')",
            "expire_snapshots: invalid duration '3D' for 'retention_period'",
        ),
        (
            "expire_snapshots(retention_period = '   ')",
            "expire_snapshots: invalid duration '   ' for 'retention_period'",
        ),
        (
            "expire_snapshots(retention_period = '99999999999999999d')",
            "expire_snapshots: invalid duration '99999999999999999d' for 'retention_period'",
        ),
        (
            "expire_snapshots(retention_period = '')",
            "expire_snapshots 'retention_period' cannot be empty",
        ),
        (
            "expire_snapshots(retention_period = '-3d')",
            "expire_snapshots expects 'retention_period' to be non-negative",
        ),
        (
            "expire_snapshots(retention_period = '-3')",
            "expire_snapshots expects 'retention_period' to be non-negative",
        ),
        (
            "expire_snapshots(retention_period = 3)",
            "expire_snapshots expects 'retention_period' to be a duration string like '3d', '12h', '30m', '15s' or '250ms'",
        ),
    ]);
}

#[test]
fn retain_last_and_snapshot_ids_messages() {
    assert_bad_arguments(&[
        (
            "expire_snapshots(retain_last = 0)",
            "expire_snapshots expects 'retain_last' to be positive",
        ),
        (
            "expire_snapshots(retain_last = -1)",
            "expire_snapshots expects 'retain_last' to be positive",
        ),
        (
            "expire_snapshots(retain_last = -99999999999)",
            "expire_snapshots expects 'retain_last' to be positive",
        ),
        (
            "expire_snapshots(retain_last = '2')",
            "expire_snapshots expects 'retain_last' to be an integer literal",
        ),
        (
            "expire_snapshots(retain_last = 2.5)",
            "expire_snapshots expects 'retain_last' to be an integer literal",
        ),
        (
            "expire_snapshots(retain_last = true)",
            "expire_snapshots expects 'retain_last' to be an integer literal",
        ),
        (
            "expire_snapshots(retain_last = 18446744073709551616)",
            "expire_snapshots expects 'retain_last' to be an integer literal",
        ),
        (
            "expire_snapshots(retain_last = 2147483648)",
            "expire_snapshots 'retain_last' is too large: 2147483648",
        ),
        (
            "expire_snapshots(retain_last = 18446744073709551615)",
            "expire_snapshots 'retain_last' is too large: 18446744073709551615",
        ),
        (
            "expire_snapshots(snapshot_ids = 1)",
            "expire_snapshots expects 'snapshot_ids' to be an array literal",
        ),
        (
            "expire_snapshots(snapshot_ids = '[1]')",
            "expire_snapshots expects 'snapshot_ids' to be an array literal",
        ),
        (
            "expire_snapshots(snapshot_ids = (1, 2))",
            "expire_snapshots expects 'snapshot_ids' to be an array literal",
        ),
        (
            "expire_snapshots(snapshot_ids = ['a'])",
            "expire_snapshots expects 'snapshot_ids' to be an integer literal",
        ),
        (
            "expire_snapshots(snapshot_ids = [1.5])",
            "expire_snapshots expects 'snapshot_ids' to be an integer literal",
        ),
        (
            "expire_snapshots(snapshot_ids = [[1]])",
            "expire_snapshots expects 'snapshot_ids' to be an integer literal",
        ),
        (
            "expire_snapshots(snapshot_ids = [NULL])",
            "expire_snapshots expects 'snapshot_ids' to be an integer literal",
        ),
        (
            "expire_snapshots(snapshot_ids = [9223372036854775808])",
            "expire_snapshots 'snapshot_ids' is too large: 9223372036854775808",
        ),
        (
            "expire_snapshots(snapshot_ids = [1], retain_last = 2)",
            "expire_snapshots argument 'snapshot_ids' cannot be combined with 'retention_period' or 'retain_last'",
        ),
        (
            "expire_snapshots(snapshot_ids = [1], retention_period = '1d')",
            "expire_snapshots argument 'snapshot_ids' cannot be combined with 'retention_period' or 'retain_last'",
        ),
    ]);
}

#[test]
fn argument_shape_messages() {
    assert_bad_arguments(&[
        (
            "expire_snapshots(foo = 1)",
            "Unknown parameter 'foo' for expire_snapshots",
        ),
        (
            "expire_snapshots(DRY_RUN = 1)",
            "Unknown parameter 'DRY_RUN' for expire_snapshots",
        ),
        (
            "expire_snapshots(foo = 1, foo = 1)",
            "Unknown parameter 'foo' for expire_snapshots",
        ),
        (
            "remove_orphan_files(foo = 1)",
            "Unknown parameter 'foo' for remove_orphan_files",
        ),
        (
            "expire_snapshots('2020-01-01', '2020-01-01')",
            "expire_snapshots accepts at most 1 positional argument(s)",
        ),
        (
            "remove_orphan_files('2020-01-01', '2020-01-01')",
            "remove_orphan_files accepts at most 1 positional argument(s)",
        ),
        (
            "expire_snapshots(expire_before = '2020-01-01', expire_before = '2020-01-01')",
            "Duplicate parameter 'expire_before' for expire_snapshots()",
        ),
        (
            "expire_snapshots('2020-01-01', expire_before = '2020-01-01')",
            "Duplicate parameter 'expire_before' for expire_snapshots()",
        ),
        (
            "remove_orphan_files(dry_run = 1, dry_run = 1)",
            "Duplicate parameter 'dry_run' for remove_orphan_files()",
        ),
        (
            "expire_snapshots(dry_run = 1, '2020-01-01')",
            "Positional arguments must precede named arguments in expire_snapshots()",
        ),
        (
            "remove_orphan_files(dry_run = 1, '2020-01-01')",
            "Positional arguments must precede named arguments in remove_orphan_files()",
        ),
        (
            "expire_snapshots(now())",
            "Argument 1 to expire_snapshots() must be a literal value",
        ),
        (
            "expire_snapshots(dry_run = 1 + 1)",
            "Argument 1 to expire_snapshots() must be a literal value",
        ),
        (
            "expire_snapshots(dry_run = -(1))",
            "Argument 1 to expire_snapshots() must be a literal value",
        ),
        (
            "expire_snapshots(x = 1 = 2)",
            "Argument 1 to expire_snapshots() must be a literal value",
        ),
        (
            "expire_snapshots(dry_run = 1, x = [now()])",
            "Argument 2 to expire_snapshots() must be a literal value",
        ),
        (
            "remove_orphan_files(now())",
            "Argument 1 to remove_orphan_files() must be a literal value",
        ),
        (
            "EXPIRE_SNAPSHOTS()",
            "Unknown EXECUTE command 'EXPIRE_SNAPSHOTS' for Iceberg table",
        ),
        ("foo()", "Unknown EXECUTE command 'foo' for Iceberg table"),
    ]);
}

#[test]
fn per_argument_order_matches_clickhouse() {
    assert_bad_arguments(&[
        // The first argument's problem wins, whatever it is.
        (
            "expire_snapshots(1, 2, 3)",
            "Parameter 'expire_before' for expire_snapshots has wrong type (got UInt64, expected String)",
        ),
        (
            "expire_snapshots(5, now())",
            "Parameter 'expire_before' for expire_snapshots has wrong type (got UInt64, expected String)",
        ),
        (
            "expire_snapshots(expire_before = now(), foo = 1)",
            "Argument 1 to expire_snapshots() must be a literal value",
        ),
        (
            "expire_snapshots(foo = 1, expire_before = 5)",
            "Unknown parameter 'foo' for expire_snapshots",
        ),
        (
            "expire_snapshots(expire_before = 5, foo = 1)",
            "Parameter 'expire_before' for expire_snapshots has wrong type (got UInt64, expected String)",
        ),
        // Then values in a fixed order.
        (
            "expire_snapshots(retain_last = 0, retention_period = 'x')",
            "expire_snapshots: invalid duration 'x' for 'retention_period'",
        ),
        (
            "expire_snapshots(snapshot_ids = ['a'], retain_last = 0)",
            "expire_snapshots expects 'retain_last' to be positive",
        ),
        (
            "expire_snapshots(dry_run = 'x', snapshot_ids = ['a'])",
            "expire_snapshots expects 'snapshot_ids' to be an integer literal",
        ),
        (
            "expire_snapshots(snapshot_ids = 'a', retention_period = '1d')",
            "expire_snapshots expects 'snapshot_ids' to be an array literal",
        ),
        (
            "remove_orphan_files(older_than = '2099-01-01', location = '/x')",
            "older_than must not be in the future; a future value would bypass the in-progress-write safety window",
        ),
    ]);
    let e = error("expire_snapshots(dry_run = 'x', expire_before = 'junk')");
    assert_eq!(e.kind(), ErrorKind::CannotParseDatetime);
}

#[test]
fn wrong_type_names_follow_clickhouse() {
    for (value, type_name) in [
        ("5", "UInt64"),
        ("-5", "Int64"),
        ("5.5", "Float64"),
        ("[1, 2]", "Array"),
        ("[]", "Array"),
        ("true", "Bool"),
        ("NULL", "Null"),
        ("(1, 2)", "Tuple"),
    ] {
        let e = error(&format!("expire_snapshots(expire_before = {value})"));
        assert_eq!(
            e.message(),
            format!(
                "Parameter 'expire_before' for expire_snapshots has wrong type (got {type_name}, expected String)"
            )
        );
    }
    assert_bad_arguments(&[
        (
            "remove_orphan_files(dry_run = 'x')",
            "Parameter 'dry_run' for remove_orphan_files has wrong type (got String, expected UInt64)",
        ),
        (
            "remove_orphan_files(dry_run = -1)",
            "Parameter 'dry_run' for remove_orphan_files has wrong type (got Int64, expected UInt64)",
        ),
        (
            "remove_orphan_files(dry_run = true)",
            "Parameter 'dry_run' for remove_orphan_files has wrong type (got Bool, expected UInt64)",
        ),
        (
            "remove_orphan_files(dry_run = 1.0)",
            "Parameter 'dry_run' for remove_orphan_files has wrong type (got Float64, expected UInt64)",
        ),
        (
            "remove_orphan_files(location = 5)",
            "Parameter 'location' for remove_orphan_files has wrong type (got UInt64, expected String)",
        ),
        (
            "remove_orphan_files(5)",
            "Parameter 'older_than' for remove_orphan_files has wrong type (got UInt64, expected String)",
        ),
    ]);
}

#[test]
fn timestamps_fail_as_cannot_parse_datetime() {
    for value in [
        "'2026-13-01'",
        "'garbage'",
        "''",
        "'-1'",
        "' 2020-01-01'",
        "'2020-01-01 00:00'",
    ] {
        for call in [
            format!("expire_snapshots({value})"),
            format!("remove_orphan_files(older_than = {value})"),
        ] {
            let e = error(&call);
            assert_eq!(e.kind(), ErrorKind::CannotParseDatetime, "{call}");
            assert_eq!(e.code(), 41);
            assert!(
                e.message().starts_with("Cannot parse datetime"),
                "{call}: {e}"
            );
        }
    }
}

#[test]
fn orphan_options() {
    assert_eq!(orphans("remove_orphan_files()"), OrphanOptions::default());
    let options = orphans("remove_orphan_files('2025-12-01', location = './data/', dry_run = 2)");
    assert_eq!(
        options,
        OrphanOptions {
            older_than_ms: Some(1_764_547_200_000),
            location: Some("data".into()),
            dry_run: true,
            protect_other_tables: false,
        }
    );
    let options = orphans("remove_orphan_files(protect_other_tables = 1, dry_run = 0)");
    assert!(options.protect_other_tables && !options.dry_run);
    assert!(orphans("remove_orphan_files(protect_other_tables = 3)").protect_other_tables);
    assert!(!orphans("remove_orphan_files(protect_other_tables = 0)").protect_other_tables);
    for (location, normalised) in [
        ("''", None),
        ("'.'", None),
        ("'./'", None),
        ("'data//x/'", Some("data/x")),
        ("'./metadata'", Some("metadata")),
        ("'data/./x'", Some("data/x")),
    ] {
        let options = orphans(&format!("remove_orphan_files(location = {location})"));
        assert_eq!(options.location.as_deref(), normalised, "{location}");
    }
    assert!(!orphans("remove_orphan_files(dry_run = 0)").dry_run);
    // Exactly now is not in the future.
    assert_eq!(
        orphans("remove_orphan_files(older_than = '2026-01-01 00:00:00')").older_than_ms,
        Some(NOW_MS)
    );
    assert_bad_arguments(&[
        (
            "remove_orphan_files(location = '/etc')",
            "location must be a relative path under the table root, got '/etc'",
        ),
        (
            "remove_orphan_files(location = '../x')",
            "location must be a relative path under the table root, got '../x'",
        ),
        (
            "remove_orphan_files(location = 'data/../x')",
            "location must be a relative path under the table root, got 'data/../x'",
        ),
        (
            "remove_orphan_files(location = 'a/..')",
            "location must be a relative path under the table root, got 'a/..'",
        ),
        (
            "remove_orphan_files(older_than = '2026-01-01 00:00:01')",
            "older_than must not be in the future; a future value would bypass the in-progress-write safety window",
        ),
    ]);
}

#[test]
fn gates_refuse_with_support_is_disabled() {
    let set = |name: &str, value: &str| {
        let mut settings = Settings::new();
        settings
            .set(
                name,
                &icetrim::internals::sql::Literal::Number(value.into()),
            )
            .expect("known setting");
        settings
    };
    assert!(check_gates("expire_snapshots", &Settings::new()).is_ok());
    assert!(check_gates("remove_orphan_files", &Settings::new()).is_ok());
    let cases = [
        (
            set("allow_insert_into_iceberg", "0"),
            "remove_orphan_files",
            "Iceberg EXECUTE commands are experimental. To allow their usage, enable setting allow_insert_into_iceberg",
        ),
        (
            set("allow_experimental_expire_snapshots", "0"),
            "expire_snapshots",
            "Iceberg expire_snapshots is experimental. To allow its usage, enable setting allow_experimental_expire_snapshots",
        ),
        (
            set("allow_iceberg_remove_orphan_files", "0"),
            "remove_orphan_files",
            "remove_orphan_files is experimental. To allow its usage, enable setting allow_iceberg_remove_orphan_files",
        ),
    ];
    for (settings, procedure, message) in cases {
        let e = check_gates(procedure, &settings).expect_err(procedure);
        assert_eq!(e.kind(), ErrorKind::SupportIsDisabled);
        assert_eq!(e.code(), 344);
        assert_eq!(e.message(), message);
    }
    // One procedure's gate does not close the other.
    assert!(
        check_gates(
            "remove_orphan_files",
            &set("allow_experimental_expire_snapshots", "0")
        )
        .is_ok()
    );
}

fn rewrite_manifests(call: &str) -> RewriteManifestsOptions {
    match bind_call(call) {
        Ok(ProcedureCall::RewriteManifests(options)) => options,
        other => panic!("{call}: {other:?}"),
    }
}

#[test]
fn rewrite_manifests_binds_its_arguments() {
    assert_eq!(
        rewrite_manifests("rewrite_manifests()"),
        RewriteManifestsOptions::default()
    );
    assert_eq!(
        rewrite_manifests(
            "rewrite_manifests(3, target_manifest_size_bytes = 1048576, dry_run => true)"
        ),
        RewriteManifestsOptions {
            spec_id: Some(3),
            target_manifest_size_bytes: Some(1_048_576),
            dry_run: true,
            min_manifest_count: None,
        }
    );
    assert_eq!(
        rewrite_manifests("rewrite_manifests(spec_id = 0, dry_run = 'false')").spec_id,
        Some(0)
    );
    assert_bad_arguments(&[
        (
            "rewrite_manifests(1, 2)",
            "rewrite_manifests accepts at most 1 positional argument(s)",
        ),
        (
            "rewrite_manifests(spec = 1)",
            "Unknown parameter 'spec' for rewrite_manifests",
        ),
        (
            "rewrite_manifests(spec_id = -1)",
            "Parameter 'spec_id' for rewrite_manifests has wrong type (got Int64, expected UInt64)",
        ),
        (
            "rewrite_manifests(spec_id = 4294967296)",
            "rewrite_manifests 'spec_id' is too large: 4294967296",
        ),
        (
            "rewrite_manifests(target_manifest_size_bytes = 0)",
            "rewrite_manifests expects 'target_manifest_size_bytes' to be positive",
        ),
        (
            "rewrite_manifests(target_manifest_size_bytes = '8MB')",
            "Parameter 'target_manifest_size_bytes' for rewrite_manifests has wrong type (got String, expected UInt64)",
        ),
        (
            "rewrite_manifests(dry_run = [1])",
            "rewrite_manifests expects 'dry_run' to be a boolean or integer literal",
        ),
        (
            "rewrite_manifests(dry_run = 1, dry_run = 0)",
            "Duplicate parameter 'dry_run' for rewrite_manifests()",
        ),
    ]);
}

#[test]
fn clean_expired_metadata_is_a_flag_of_expire_snapshots() {
    assert!(!expire("expire_snapshots()").clean_expired_metadata);
    assert!(expire("expire_snapshots(clean_expired_metadata = 1)").clean_expired_metadata);
    assert!(expire("expire_snapshots(clean_expired_metadata => 'TRUE')").clean_expired_metadata);
    assert!(!expire("expire_snapshots(clean_expired_metadata = false)").clean_expired_metadata);
    assert_bad_arguments(&[(
        "expire_snapshots(clean_expired_metadata = 'yes')",
        "expire_snapshots expects 'clean_expired_metadata' to be a boolean or integer literal",
    )]);
}

#[test]
fn rewrite_manifests_gate_is_clickhouse_optimize_gate() {
    let mut settings = Settings::new();
    settings
        .set(
            "allow_experimental_iceberg_compaction",
            &icetrim::internals::sql::Literal::Number("0".into()),
        )
        .unwrap();
    assert!(check_gates("rewrite_manifests", &Settings::new()).is_ok());
    let e = check_gates("rewrite_manifests", &settings).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArguments);
    assert_eq!(
        e.message(),
        "Enable 'allow_experimental_iceberg_compaction' setting to call OPTIMIZE TABLE ... \
         MANIFEST for iceberg tables"
    );
    assert!(check_gates("expire_snapshots", &settings).is_ok());
}
