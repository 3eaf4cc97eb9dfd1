//! Splits arbitrary UTF-8 into statements, parses each, prints and reparses what parses, and binds
//! every `ALTER … EXECUTE` it finds. Any panic is a bug.
#![no_main]

use icetrim::internals::sql::{
    BindContext, SessionTimeZone, Statement, bind, parse_statement_at, split_statements,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(script) = std::str::from_utf8(data) else {
        return;
    };
    let context = BindContext {
        now_ms: 1_767_225_600_000,
        time_zone: SessionTimeZone::from_setting("America/New_York")
            .unwrap_or(SessionTimeZone::System),
    };
    for (text, line) in split_statements(script) {
        let Ok(statement) = parse_statement_at(&text, line) else {
            continue;
        };
        let printed = statement.to_string();
        match parse_statement_at(&printed, 1) {
            Ok(again) => assert_eq!(again, statement, "round trip of {printed:?}"),
            Err(e) => panic!("canonical text {printed:?} does not parse: {e}"),
        }
        let alter = match &statement {
            Statement::AlterExecute(alter) => alter,
            Statement::Explain(inner) => match inner.as_ref() {
                Statement::AlterExecute(alter) => alter,
                _ => continue,
            },
            _ => continue,
        };
        let _ = bind(&alter.procedure, &alter.args, &context);
    }
});
