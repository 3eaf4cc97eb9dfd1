//! Property tests: the duration printer round-trips, and no input makes the front end panic.

use icetrim::internals::sql::{
    Literal, SessionTimeZone, Statement, format_duration_ms, parse_duration_ms, parse_statement,
    parse_timestamp_ms, split_statements,
};
use proptest::prelude::*;

fn zones() -> impl Strategy<Value = SessionTimeZone> {
    prop_oneof![
        Just(SessionTimeZone::Named(chrono_tz::UTC)),
        Just(SessionTimeZone::Named(chrono_tz::America::New_York)),
        Just(SessionTimeZone::Named(chrono_tz::Pacific::Apia)),
        Just(SessionTimeZone::System),
    ]
}

/// Text that looks like SQL often enough to reach deep into the parser.
fn sqlish() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("ALTER TABLE t EXECUTE ".to_string()),
        Just("expire_snapshots(".to_string()),
        Just("remove_orphan_files(".to_string()),
        Just("SELECT * FROM system.iceberg_history ".to_string()),
        Just("WHERE a = 1 ".to_string()),
        Just("CREATE TABLE t (id Int64) ENGINE = IcebergLocal('/x') ".to_string()),
        Just("SET a = 1, ".to_string()),
        Just("FORMAT JSON".to_string()),
        Just("EXPLAIN ".to_string()),
        "[a-z_=>,()'`\"\\[\\]0-9. ;/*\\-#\n]{0,12}",
    ];
    prop::collection::vec(pieces, 0..8).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn every_valid_duration_round_trips(ms in 0i64..=i64::MAX) {
        let text = format_duration_ms(ms);
        prop_assert_eq!(parse_duration_ms(&text), Ok(ms), "{}", text);
    }

    #[test]
    fn duration_parser_never_panics(text in "\\PC{0,24}") {
        let _ = parse_duration_ms(&text);
    }

    #[test]
    fn duration_parser_never_panics_on_near_misses(text in "[-+ ]?[0-9_.]{0,22}(y|w|d|h|m|s|ms)?[0-9]{0,3}(h|m|s|ms)?") {
        if let Ok(ms) = parse_duration_ms(&text) {
            prop_assert!(ms >= 0);
        }
    }

    #[test]
    fn timestamp_parser_never_panics(text in "\\PC{0,32}", zone in zones()) {
        let _ = parse_timestamp_ms(&text, &zone);
    }

    #[test]
    fn timestamp_parser_never_panics_on_near_misses(
        text in "[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}([ T][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]{0,3})?)?(Z|[+-][0-9]{1,2}(:?[0-9]{2})?)?",
        zone in zones(),
    ) {
        let _ = parse_timestamp_ms(&text, &zone);
    }

    #[test]
    fn every_real_local_time_parses(secs in 0i64..4_102_444_800i64, zone in zones()) {
        let instant = chrono::DateTime::from_timestamp(secs, 0).expect("in range");
        let text = instant.format("%Y-%m-%d %H:%M:%S").to_string();
        prop_assert!(parse_timestamp_ms(&text, &zone).is_ok(), "{}", text);
    }

    #[test]
    fn statement_parser_never_panics(text in "\\PC{0,64}") {
        let _ = parse_statement(&text);
    }

    #[test]
    fn statement_parser_never_panics_on_sqlish_text(text in sqlish()) {
        if let Ok(statement) = parse_statement(&text) {
            let printed = statement.to_string();
            prop_assert_eq!(parse_statement(&printed), Ok(statement), "{}", printed);
        }
    }

    #[test]
    fn splitter_never_panics_and_loses_no_code(text in "\\PC{0,64}") {
        for (piece, line) in split_statements(&text) {
            prop_assert!(line >= 1);
            prop_assert!(!piece.trim().is_empty());
        }
    }

    #[test]
    fn string_literals_round_trip(value in "\\PC{0,16}") {
        let statement = Statement::Set(vec![("x".to_string(), Literal::String(value))]);
        let printed = statement.to_string();
        prop_assert_eq!(parse_statement(&printed), Ok(statement), "{}", printed);
    }

    #[test]
    fn split_then_parse_matches_direct_parse(a in 0u32..100, b in "[a-z]{1,8}") {
        let script = format!("SET x = {a};\n-- c;\nUSE {b}; SHOW TABLES");
        let pieces = split_statements(&script);
        prop_assert_eq!(pieces.len(), 3);
        prop_assert_eq!(pieces[1].1, 2, "the piece starts at its leading comment");
        for (piece, _) in pieces {
            prop_assert!(parse_statement(piece).is_ok(), "{}", piece);
        }
    }
}
