//! The partition filter of compaction's `where` (`maintain/compact/filter.rs`) on predicates
//! parsed from SQL: identity columns decide exactly, transforms say "maybe", a column that is not
//! a partition source and a literal that does not convert to its column's type are refused at bind
//! time. (An integration test: the maintenance layer never imports the SQL front end.)

use icetrim::internals::iceberg::manifest::{DataFile, PartitionTuple, PartitionValue};
use icetrim::internals::iceberg::metadata::{PartitionField, PartitionSpec};
use icetrim::internals::iceberg::spec::DataContent;
use icetrim::internals::maintain::compact::filter::PartitionFilter;
use icetrim::internals::maintain::compact::model::LiveFile;
use icetrim::internals::sql::{ParseLimits, parse_where_with};
use serde_json::Value as Json;

fn parse_where(text: &str) -> icetrim::Result<icetrim::internals::plan::Predicate> {
    parse_where_with(text, &ParseLimits::default())
}

fn schema() -> Json {
    serde_json::json!({"type": "struct", "fields": [
        {"id": 1, "name": "k", "required": false, "type": "long"},
        {"id": 2, "name": "d", "required": false, "type": "date"},
        {"id": 3, "name": "s", "required": false, "type": "string"},
        {"id": 4, "name": "v", "required": false, "type": "string"}
    ]})
}

fn specs() -> Vec<PartitionSpec> {
    let f = |name: &str, transform: &str, source_id, field_id| PartitionField {
        name: name.into(),
        transform: transform.into(),
        source_id,
        field_id,
    };
    vec![PartitionSpec {
        spec_id: 0,
        fields: vec![
            f("k", "identity", 1, 1000),
            f("d_month", "month", 2, 1001),
            f("s_trunc", "truncate[2]", 3, 1002),
        ],
    }]
}

fn file(k: Option<i64>, month: i32, s: &str) -> LiveFile {
    let mut data = DataFile::new(DataContent::Data, "f", 1, 1);
    data.partition = PartitionTuple::new(vec![
        (
            "k".into(),
            k.map_or(PartitionValue::Null, PartitionValue::Long),
        ),
        ("d_month".into(), PartitionValue::Int(month)),
        ("s_trunc".into(), PartitionValue::String(s.into())),
    ]);
    LiveFile {
        file: data,
        spec_id: 0,
        spec_unpartitioned: false,
        partition: String::new(),
        data_sequence_number: 1,
    }
}

fn matches(pred: &str, f: &LiveFile) -> bool {
    let p = parse_where(pred).unwrap();
    PartitionFilter::new(&p, &schema(), &specs())
        .unwrap()
        .may_match(f)
}

#[test]
fn identity_is_exact_and_transforms_may_match() {
    let f = file(Some(5), 648, "ab"); // 648 = 2024-01
    assert!(matches("k = 5", &f));
    assert!(!matches("k = 6", &f));
    assert!(matches("k IN (1, 5)", &f));
    assert!(!matches("k NOT IN (5)", &f));
    assert!(!matches("NOT k = 5", &f));
    assert!(matches("k >= 5 AND k < 6", &f));
    assert!(matches("d = '2024-01-31'", &f));
    assert!(!matches("d = '2024-02-01'", &f));
    assert!(!matches("d < '2023-12-31'", &f));
    assert!(matches("d > '2023-12-31'", &f));
    assert!(matches("s = 'abc'", &f));
    assert!(!matches("s = 'xyz'", &f));
    assert!(matches("k = 6 OR s >= 'aa'", &f));
    assert!(matches("NOT d = '2024-01-02'", &f), "maybe stays maybe");
    assert!(!matches("k IS NULL", &f));
    assert!(matches("k IS NULL", &file(None, 1, "x")));
    assert!(!matches("k = 5", &file(None, 1, "x")));
}

#[test]
fn columns_must_be_partition_sources() {
    let p = parse_where("v = 'x'").unwrap();
    let e = PartitionFilter::new(&p, &schema(), &specs()).unwrap_err();
    assert!(e.message().contains("not a partition source"));
    let p = parse_where("nope = 1").unwrap();
    let e = PartitionFilter::new(&p, &schema(), &specs()).unwrap_err();
    assert!(e.message().contains("unknown column"));
}

fn refusal(pred: &str) -> String {
    let p = parse_where(pred).unwrap();
    let e = PartitionFilter::new(&p, &schema(), &specs()).unwrap_err();
    assert_eq!(e.kind(), icetrim::ErrorKind::BadArguments, "{pred}");
    e.message().to_string()
}

#[test]
fn literals_that_do_not_convert_are_refused_at_bind_time() {
    // The literal is refused whatever the rest of the predicate says, and whatever the
    // files are: nothing "may match" through a literal that does not convert.
    for (pred, want) in [
        (
            "k = 'abc'",
            "Invalid value for conversion to type long: abc (String)",
        ),
        (
            "k = 1.5",
            "Invalid value for conversion to type long: 1.5 (Float64)",
        ),
        (
            "k = 99999999999999999999",
            "Invalid value for conversion to type long: 99999999999999999999 (Float64)",
        ),
        ("k IN (1, 'x')", "type long: x (String)"),
        ("k = 1 OR k > 'x'", "type long: x (String)"),
        ("NOT k BETWEEN 1 AND 2.5", "type long: 2.5 (Float64)"),
        ("d = '2024-02-30'", "type date: 2024-02-30 (String)"),
        ("d >= 1.5", "type date: 1.5 (Float64)"),
        ("s = 5", "type string: 5 (UInt64)"),
        ("s = true", "type string: true (Bool)"),
        // Not a partition column: still checked against the schema type, first.
        ("v = 5", "type string: 5 (UInt64)"),
        ("k = NULL", "Cannot create expression literal from null"),
        (
            "k IN (1, NULL)",
            "Cannot create expression literal from null",
        ),
        (
            "k NOT IN (NULL)",
            "Cannot create expression literal from null",
        ),
        ("k != NULL", "Cannot create expression literal from null"),
        // Days whose microseconds overflow: no month (the spec partitions d by month).
        (
            "d < 2147483647",
            "out of the range of its partition transform month (spec 0)",
        ),
    ] {
        let m = refusal(pred);
        assert!(m.contains(want), "{pred}: {m}");
        assert!(m.starts_with("rewrite_data_files 'where': "), "{m}");
    }
    assert!(refusal("k = 'abc'").contains("for column 'k'"));
}

#[test]
fn strings_holding_the_columns_type_are_accepted() {
    let f = file(Some(5), 648, "ab");
    assert!(matches("k = '5'", &f));
    assert!(!matches("k = '6'", &f));
    assert!(matches("k IN ('5', 7)", &f));
    assert!(matches("k = 5.0", &f), "an integral number");
    assert!(matches("d >= 19723", &f), "days since 1970 (2024-01-01)");
    assert!(!matches("d < 19700", &f), "2023-12-08: month 647");
    assert!(matches(
        "k IS NOT NULL AND d BETWEEN '2024-01-01' AND '2024-01-31'",
        &f
    ));
}

#[test]
fn partition_values_of_every_identity_kind_compare() {
    let schema = serde_json::json!({"type": "struct", "fields": [
        {"id": 1, "name": "dec", "required": false, "type": "decimal(9,2)"},
        {"id": 2, "name": "u", "required": false, "type": "uuid"},
        {"id": 3, "name": "b", "required": false, "type": "boolean"},
        {"id": 4, "name": "f", "required": false, "type": "float"}
    ]});
    let field = |name: &str, source_id, field_id| PartitionField {
        name: name.into(),
        transform: "identity".into(),
        source_id,
        field_id,
    };
    let specs = vec![PartitionSpec {
        spec_id: 0,
        fields: vec![
            field("dec", 1, 1000),
            field("u", 2, 1001),
            field("b", 3, 1002),
            field("f", 4, 1003),
        ],
    }];
    let uuid = uuid::Uuid::parse_str("00000000-0000-0000-0000-000000000005").unwrap();
    let mut data = DataFile::new(DataContent::Data, "f", 1, 1);
    data.partition = PartitionTuple::new(vec![
        (
            "dec".into(),
            PartitionValue::Fixed(1234i32.to_be_bytes().to_vec()),
        ),
        ("u".into(), PartitionValue::Fixed(uuid.as_bytes().to_vec())),
        ("b".into(), PartitionValue::Boolean(true)),
        ("f".into(), PartitionValue::Float(0.1)),
    ]);
    let f = LiveFile {
        file: data,
        spec_id: 0,
        spec_unpartitioned: false,
        partition: String::new(),
        data_sequence_number: 1,
    };
    let m = |pred: &str| {
        PartitionFilter::new(&parse_where(pred).unwrap(), &schema, &specs)
            .unwrap()
            .may_match(&f)
    };
    assert!(m("dec = 12.34") && m("dec = '12.340'") && !m("dec > 12.34"));
    assert!(m("u = '00000000-0000-0000-0000-000000000005'"));
    assert!(!m("u = '00000000-0000-0000-0000-000000000006'"));
    assert!(m("b = true") && m("b = 1") && !m("b = false"));
    assert!(
        m("f = 0.1"),
        "the literal is rounded to 32 bits as the column is"
    );
}
