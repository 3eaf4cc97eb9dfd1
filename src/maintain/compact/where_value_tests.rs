//! Every Iceberg primitive type against every kind of literal: what converts, to what value, and
//! what is refused.

use super::*;
use crate::iceberg::manifest::PartitionValue;
use IcebergType::*;
use Val::{B, Bytes, D, F, I, S};

fn number(t: &str) -> Literal {
    Literal::Number(t.into())
}

fn string(t: &str) -> Literal {
    Literal::String(t.into())
}

const UUID_TEXT: &str = "f79c3e09-677c-4bbd-a479-3f349cb785e7";

/// The literal kinds, by name.
fn kinds() -> Vec<(&'static str, Literal)> {
    vec![
        ("zero", number("0")),
        ("one", number("1")),
        ("int", number("42")),
        ("negative", number("-7")),
        ("above_int", number("3000000000")),
        ("above_u64", number("99999999999999999999")),
        ("fraction", number("1.5")),
        ("integral_fraction", number("2.0")),
        ("exponent", number("1e3")),
        ("cents", number("12.34")),
        ("str_int", string("42")),
        ("str_fraction", string("1.5")),
        ("str_abc", string("abc")),
        ("str_empty", string("")),
        ("str_true", string("true")),
        ("str_date", string("2024-02-29")),
        ("str_bad_date", string("2024-02-30")),
        ("str_timestamp", string("2024-02-29 10:30:00.5")),
        ("str_timestamp_z", string("2024-02-29T10:30:00Z")),
        ("str_timestamp_offset", string("2024-02-29T12:30:00+02:00")),
        ("str_far_timestamp", string("2300-01-01 00:00:00")),
        ("str_time", string("12:30:00.25")),
        ("str_uuid", string(UUID_TEXT)),
        ("str_four", string("wxyz")),
        ("bool", Literal::Bool(true)),
        ("null", Literal::Null),
        ("array", Literal::Array(vec![number("1")].into())),
        ("tuple", Literal::Tuple(vec![number("1"), number("2")])),
    ]
}

const DAY_2024_02_29: i64 = 19_782;
const TS_2024_02_29_1030: i64 = (DAY_2024_02_29 * 86_400 + 10 * 3600 + 30 * 60) * 1_000_000;

fn uuid_bytes() -> Vec<u8> {
    uuid::Uuid::parse_str(UUID_TEXT)
        .unwrap()
        .as_bytes()
        .to_vec()
}

/// For each type, the literal kinds that convert and their values; every other kind is refused.
fn accepted() -> Vec<(IcebergType, Vec<(&'static str, Val)>)> {
    let ints = |ty_max_above_int: bool| {
        let mut v = vec![
            ("zero", I(0)),
            ("one", I(1)),
            ("int", I(42)),
            ("negative", I(-7)),
            ("integral_fraction", I(2)),
            ("exponent", I(1000)),
            ("str_int", I(42)),
        ];
        if ty_max_above_int {
            v.push(("above_int", I(3_000_000_000)));
        }
        v
    };
    let floats = |round: fn(f64) -> f64| {
        vec![
            ("zero", F(0.0)),
            ("one", F(1.0)),
            ("int", F(42.0)),
            ("negative", F(-7.0)),
            ("above_int", F(3e9)),
            ("above_u64", F(round(1e20))),
            ("fraction", F(1.5)),
            ("integral_fraction", F(2.0)),
            ("exponent", F(1000.0)),
            ("cents", F(round(12.34))),
            ("str_int", F(42.0)),
            ("str_fraction", F(1.5)),
        ]
    };
    let timestamp = |scale: i64, tz: bool| {
        let mut v = vec![
            ("str_date", I(DAY_2024_02_29 * 86_400_000_000 * scale)),
            ("str_timestamp", I((TS_2024_02_29_1030 + 500_000) * scale)),
        ];
        if tz {
            v.push(("str_timestamp_z", I(TS_2024_02_29_1030 * scale)));
            v.push(("str_timestamp_offset", I(TS_2024_02_29_1030 * scale)));
        }
        if scale == 1 {
            // 2300-01-01: past the nanosecond range (2262), within the microsecond one.
            v.push(("str_far_timestamp", I(10_413_792_000_000_000)));
        }
        v
    };
    vec![
        (
            Boolean,
            vec![
                ("zero", B(false)),
                ("one", B(true)),
                ("str_true", B(true)),
                ("bool", B(true)),
            ],
        ),
        (Int, ints(false)),
        (Long, ints(true)),
        (Float, floats(|v| f64::from(v as f32))),
        (Double, floats(|v| v)),
        (
            Decimal {
                precision: 6,
                scale: 2,
            },
            vec![
                ("zero", D(0)),
                ("one", D(100)),
                ("int", D(4200)),
                ("negative", D(-700)),
                ("fraction", D(150)),
                ("integral_fraction", D(200)),
                ("exponent", D(100_000)),
                ("cents", D(1234)),
                ("str_int", D(4200)),
                ("str_fraction", D(150)),
            ],
        ),
        (
            Date,
            vec![
                ("zero", I(0)),
                ("one", I(1)),
                ("int", I(42)),
                ("negative", I(-7)),
                ("integral_fraction", I(2)),
                ("exponent", I(1000)),
                ("str_date", I(DAY_2024_02_29)),
            ],
        ),
        (Time, vec![("str_time", I(45_000_250_000))]),
        (Timestamp, timestamp(1, false)),
        (TimestampTz, timestamp(1, true)),
        (TimestampNs, timestamp(1000, false)),
        (TimestampTzNs, timestamp(1000, true)),
        (
            String,
            [
                "str_int",
                "str_fraction",
                "str_abc",
                "str_empty",
                "str_true",
                "str_date",
                "str_bad_date",
                "str_timestamp",
                "str_timestamp_z",
                "str_timestamp_offset",
                "str_far_timestamp",
                "str_time",
                "str_uuid",
                "str_four",
            ]
            .into_iter()
            .map(|k| {
                let text = kinds()
                    .into_iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, l)| literal_text(&l))
                    .unwrap();
                (k, S(text))
            })
            .collect(),
        ),
        (Uuid, vec![("str_uuid", Bytes(uuid_bytes()))]),
        (
            Fixed(4),
            vec![
                ("str_true", Bytes(b"true".to_vec())),
                ("str_four", Bytes(b"wxyz".to_vec())),
            ],
        ),
        (
            Binary,
            [
                ("str_int", "42"),
                ("str_fraction", "1.5"),
                ("str_abc", "abc"),
                ("str_empty", ""),
                ("str_true", "true"),
                ("str_date", "2024-02-29"),
                ("str_bad_date", "2024-02-30"),
                ("str_timestamp", "2024-02-29 10:30:00.5"),
                ("str_timestamp_z", "2024-02-29T10:30:00Z"),
                ("str_timestamp_offset", "2024-02-29T12:30:00+02:00"),
                ("str_far_timestamp", "2300-01-01 00:00:00"),
                ("str_time", "12:30:00.25"),
                ("str_uuid", UUID_TEXT),
                ("str_four", "wxyz"),
            ]
            .into_iter()
            .map(|(k, t)| (k, Bytes(t.as_bytes().to_vec())))
            .collect(),
        ),
    ]
}

#[test]
fn every_type_against_every_literal_kind() {
    let kinds = kinds();
    let table = accepted();
    assert_eq!(table.len(), 16, "every primitive type");
    for (ty, ok) in &table {
        for (name, _) in ok {
            assert!(
                kinds.iter().any(|(k, _)| k == name),
                "{ty}: unknown kind {name}"
            );
        }
        for (name, literal) in &kinds {
            let got = convert(literal, *ty);
            let want = ok.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            assert_eq!(got, want, "{name} ({literal:?}) as {ty}");
        }
    }
}

#[test]
fn ranges_are_the_types() {
    let i32_max = i32::MAX.to_string();
    let above = (i64::from(i32::MAX) + 1).to_string();
    assert_eq!(
        convert(&number(&i32_max), Int),
        Some(I(i64::from(i32::MAX)))
    );
    assert_eq!(convert(&number(&above), Int), None);
    assert_eq!(
        convert(&number("-2147483648"), Int),
        Some(I(-2_147_483_648))
    );
    assert_eq!(convert(&number("-2147483649"), Int), None);
    assert_eq!(
        convert(&number("9223372036854775807"), Long),
        Some(I(i64::MAX))
    );
    assert_eq!(convert(&number("9223372036854775808"), Long), None);
    assert_eq!(convert(&number("1e400"), Double), None);
    assert_eq!(convert(&number("3.5e38"), Float), None, "above f32::MAX");
    assert_eq!(convert(&string("NaN"), Double), None);
    assert_eq!(convert(&string("inf"), Double), None);
    let dec = Decimal {
        precision: 4,
        scale: 2,
    };
    assert_eq!(convert(&number("99.99"), dec), Some(D(9999)));
    assert_eq!(convert(&number("100"), dec), None, "five digits");
    assert_eq!(
        convert(&number("1.230"), dec),
        Some(D(123)),
        "a zero past the scale"
    );
    assert_eq!(
        convert(&number("1.235"), dec),
        None,
        "a digit past the scale"
    );
    assert_eq!(convert(&number("-0.01"), dec), Some(D(-1)));
    assert_eq!(convert(&number("2147483648"), Date), None);
    assert_eq!(convert(&string("24:00:00"), Time), None);
    assert_eq!(
        convert(&string("2300-01-01"), TimestampNs),
        None,
        "past 2262"
    );
    assert_eq!(convert(&string("1_000"), Long), Some(I(1000)));
    assert_eq!(convert(&number("1.5e1"), Int), Some(I(15)));
    assert_eq!(convert(&number("0x10"), Long), None);
}

#[test]
fn type_names_parse_and_print_as_java_does() {
    for (text, printed) in [
        ("decimal(10,2)", "decimal(10, 2)"),
        ("decimal(38, 0)", "decimal(38, 0)"),
        ("fixed[16]", "fixed[16]"),
        ("timestamptz_ns", "timestamptz_ns"),
        ("int", "int"),
    ] {
        assert_eq!(IcebergType::parse(text).unwrap().to_string(), printed);
    }
    for bad in [
        "decimal(39,2)",
        "decimal(2,3)",
        "fixed[x]",
        "variant",
        "struct",
        "",
    ] {
        assert_eq!(IcebergType::parse(bad), None, "{bad}");
    }
    assert_eq!(
        literal_text(&Literal::Array(vec![number("1"), string("a")].into())),
        "[1, a]"
    );
}

#[test]
fn partition_values_and_transforms() {
    let dec = Decimal {
        precision: 9,
        scale: 2,
    };
    let neg = PartitionValue::Fixed(vec![0xff, 0xff, 0xff, 0xfe]);
    assert_eq!(partition_val(&neg, Some(dec)), Some(D(-2)));
    assert_eq!(
        partition_val(&PartitionValue::Bytes(vec![1, 2]), Some(Binary)),
        Some(Bytes(vec![1, 2]))
    );
    assert_eq!(partition_val(&PartitionValue::Null, Some(Int)), None);
    assert_eq!(
        apply_transform("truncate[10]", dec, &D(-2)),
        Some(D(-10)),
        "truncate rounds towards negative infinity"
    );
    assert_eq!(
        apply_transform("truncate[2]", Binary, &Bytes(vec![1, 2, 3])),
        Some(Bytes(vec![1, 2]))
    );
    assert_eq!(
        apply_transform("truncate[10]", Long, &I(i64::MIN + 1)),
        None
    );
    assert_eq!(
        apply_transform("month", Date, &I(DAY_2024_02_29)),
        Some(I(649))
    );
    assert_eq!(
        apply_transform("hour", TimestampNs, &I(3_600_000_000_000)),
        Some(I(1))
    );
    assert_eq!(apply_transform("year", Timestamp, &I(i64::MAX)), None);
    assert!(order_preserving(
        "truncate[3]",
        Decimal {
            precision: 5,
            scale: 1
        }
    ));
    assert!(!order_preserving("hour", Date));
    assert!(!order_preserving("bucket[4]", Long));
    assert!(!order_preserving("year", Long));
}
