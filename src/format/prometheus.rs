//! `FORMAT Prometheus`: a result whose columns are `name` (String) and `value` (a number), and
//! optionally `help`, `type` (String), `labels` (`Map(String, String)`) and `timestamp` (a
//! number), printed as Prometheus's text exposition the way ClickHouse prints it (observed
//! through chdb):
//!
//! - consecutive rows of one name are one group: `# HELP` and `# TYPE` from the group's first
//!   row (left out when empty), then one sample line per row, then a blank line; rows of a name
//!   that come back later start a new group (the result should be ordered by name);
//! - labels sorted by key, values escaped (`\` `"` and newline as `\\` `\"` `\n`); a new line in
//!   HELP becomes a space;
//! - values as the number they are (`NaN`, `+Inf`, `-Inf` for the IEEE specials); a timestamp of
//!   0 or NULL is left out. Unlike ClickHouse, `Nullable` number columns are taken (the query
//!   layer marks computed columns nullable where ClickHouse would not); a NULL value is `NaN`;
//! - for `histogram` and `summary`, the rows labelled `{'sum':''}` and `{'count':''}` become
//!   `<name>_sum` and `<name>_count` after the other rows; a histogram's other rows are
//!   `<name>_bucket`, and a `le="+Inf"` bucket equal to the count is added when missing.
//!
//! Columns it does not know are ignored. A missing `name` or `value`, or a column of the wrong
//! type, is ClickHouse's `BAD_ARGUMENTS` error ([`check_columns`]), raised before anything runs.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{Column, Value};
use crate::error::{Error, Result};

const FORMAT: &str = "Prometheus";

/// Where each known column is in a result.
#[derive(Debug, Clone, Copy)]
struct Layout {
    name: usize,
    value: usize,
    help: Option<usize>,
    kind: Option<usize>,
    labels: Option<usize>,
    timestamp: Option<usize>,
}

/// Checks that `columns` can be printed as Prometheus exposition.
pub fn check_columns(columns: &[Column]) -> Result<()> {
    layout(columns).map(|_| ())
}

/// The error of `FORMAT Prometheus` on a statement that is not a `SELECT` (its columns are never
/// `name` and `value`), or as the default format of every statement.
pub fn needs_a_select() -> Error {
    Error::bad_arguments(format!(
        "Column 'name' is required for output format '{FORMAT}': only a SELECT with columns \
         name and value can be printed as {FORMAT} (give it in the SELECT's FORMAT clause)"
    ))
}

fn layout(columns: &[Column]) -> Result<Layout> {
    let find = |name: &str| columns.iter().position(|c| c.name == name);
    let required = |name: &str| {
        find(name).ok_or_else(|| {
            Error::bad_arguments(format!(
                "Column '{name}' is required for output format '{FORMAT}'"
            ))
        })
    };
    let layout = Layout {
        name: required("name")?,
        value: required("value")?,
        help: find("help"),
        kind: find("type"),
        labels: find("labels"),
        timestamp: find("timestamp"),
    };
    let text = |i: usize| is_string(&columns[i].type_name);
    let number = |i: usize| is_number(&columns[i].type_name);
    let checks = [
        (Some(layout.name), text(layout.name)),
        (Some(layout.value), number(layout.value)),
        (layout.help, layout.help.is_none_or(text)),
        (layout.kind, layout.kind.is_none_or(text)),
        (
            layout.labels,
            layout
                .labels
                .is_none_or(|i| is_string_map(&columns[i].type_name)),
        ),
        (layout.timestamp, layout.timestamp.is_none_or(number)),
    ];
    for (column, ok) in checks {
        if let (Some(i), false) = (column, ok) {
            return Err(Error::bad_arguments(format!(
                "Illegal type '{}' of column '{}' for output format '{FORMAT}'",
                columns[i].type_name, columns[i].name
            )));
        }
    }
    Ok(layout)
}

fn unwrap_nullable(type_name: &str) -> &str {
    type_name
        .strip_prefix("Nullable(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(type_name)
}

fn is_string_map(type_name: &str) -> bool {
    let t = unwrap_nullable(type_name);
    t == "Map(String, String)" || t == "Map(String, Nullable(String))"
}

fn is_string(type_name: &str) -> bool {
    let t = unwrap_nullable(type_name);
    let t = t
        .strip_prefix("LowCardinality(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(t);
    t == "String" || t.starts_with("FixedString(")
}

fn is_number(type_name: &str) -> bool {
    let t = unwrap_nullable(type_name);
    ["Int", "UInt", "Float", "Decimal", "BFloat"]
        .iter()
        .any(|prefix| t.starts_with(prefix))
}

/// One sample line: its name suffix, its labels, its value and timestamp.
struct Sample {
    suffix: &'static str,
    labels: BTreeMap<String, String>,
    value: String,
    timestamp: Option<String>,
}

/// The exposition text of `rows` (see the module comment); `BAD_ARGUMENTS` when the columns do
/// not fit ([`check_columns`]) or a labels cell is not a map.
pub fn render(columns: &[Column], rows: &[Vec<Value>]) -> Result<String> {
    let layout = layout(columns)?;
    let mut out = String::new();
    let mut start = 0;
    while start < rows.len() {
        let name = text_of(&rows[start], Some(layout.name));
        let end = (start..rows.len())
            .find(|&i| text_of(&rows[i], Some(layout.name)) != name)
            .unwrap_or(rows.len());
        render_group(&mut out, &name, &rows[start..end], layout)?;
        start = end;
    }
    Ok(out)
}

fn render_group(out: &mut String, name: &str, rows: &[Vec<Value>], layout: Layout) -> Result<()> {
    let first = &rows[0];
    let help = text_of(first, layout.help).replace(['\n', '\r'], " ");
    let kind = text_of(first, layout.kind);
    if !help.is_empty() {
        let _ = writeln!(out, "# HELP {name} {help}");
    }
    if !kind.is_empty() {
        let _ = writeln!(out, "# TYPE {name} {kind}");
    }
    let aggregate = kind == "histogram" || kind == "summary";
    let (mut plain, mut sum, mut count) = (Vec::new(), None, None);
    for row in rows {
        let labels = match layout.labels.and_then(|i| row.get(i)) {
            Some(Value::Str(text)) => parse_map(text)?,
            _ => BTreeMap::new(),
        };
        let sample = Sample {
            suffix: "",
            value: number_text(row.get(layout.value)),
            timestamp: layout
                .timestamp
                .and_then(|i| row.get(i))
                .filter(|v| !matches!(v, Value::Null))
                .map(|v| number_text(Some(v)))
                .filter(|t| t != "0"),
            labels,
        };
        let only = |key: &str| {
            sample.labels.len() == 1 && sample.labels.get(key).is_some_and(String::is_empty)
        };
        match () {
            _ if aggregate && only("sum") => sum = Some(sample),
            _ if aggregate && only("count") => count = Some(sample),
            _ if kind == "histogram" => plain.push(Sample {
                suffix: "_bucket",
                ..sample
            }),
            _ => plain.push(sample),
        }
    }
    let missing_inf = kind == "histogram"
        && !plain
            .iter()
            .any(|s| s.labels.get("le").is_some_and(|le| le == "+Inf"));
    let inf_bucket = match (&count, missing_inf) {
        (Some(count), true) => Some(Sample {
            suffix: "_bucket",
            labels: BTreeMap::from([("le".to_string(), "+Inf".to_string())]),
            value: count.value.clone(),
            timestamp: count.timestamp.clone(),
        }),
        _ => None,
    };
    let sum = sum.map(|s| Sample {
        suffix: "_sum",
        labels: BTreeMap::new(),
        ..s
    });
    let count = count.map(|s| Sample {
        suffix: "_count",
        labels: BTreeMap::new(),
        ..s
    });
    for sample in plain.iter().chain(&sum).chain(&count).chain(&inf_bucket) {
        write_sample(out, name, sample);
    }
    out.push('\n');
    Ok(())
}

fn write_sample(out: &mut String, name: &str, sample: &Sample) {
    out.push_str(name);
    out.push_str(sample.suffix);
    if !sample.labels.is_empty() {
        let parts: Vec<String> = sample
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
            .collect();
        let _ = write!(out, "{{{}}}", parts.join(","));
    }
    let _ = write!(out, " {}", sample.value);
    if let Some(timestamp) = &sample.timestamp {
        let _ = write!(out, " {timestamp}");
    }
    out.push('\n');
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn text_of(row: &[Value], column: Option<usize>) -> String {
    match column.and_then(|i| row.get(i)) {
        None | Some(Value::Null) => String::new(),
        Some(value) => value.to_string(),
    }
}

/// A number as Prometheus writes it: integers as they are, floats in their shortest form, the
/// IEEE specials as `NaN`, `+Inf`, `-Inf`.
fn number_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::Float(f)) if f.is_nan() => "NaN".to_string(),
        Some(Value::Float(f)) if f.is_infinite() && *f > 0.0 => "+Inf".to_string(),
        Some(Value::Float(f)) if f.is_infinite() => "-Inf".to_string(),
        Some(Value::Str(s)) if s.eq_ignore_ascii_case("nan") => "NaN".to_string(),
        Some(Value::Str(s)) if s.eq_ignore_ascii_case("inf") => "+Inf".to_string(),
        Some(Value::Str(s)) if s.eq_ignore_ascii_case("-inf") => "-Inf".to_string(),
        // ClickHouse refuses a Nullable value column; the query layer marks columns nullable
        // more often than ClickHouse, so they are taken and a NULL is "no value".
        Some(Value::Null) | None => "NaN".to_string(),
        Some(other) => other.to_string(),
    }
}

/// A `Map(String, String)` cell as the query layer prints it: `{'k':'v',…}`, strings quoted with
/// `'` and `\` and `'` escaped by `\` (a NULL value is empty).
fn parse_map(text: &str) -> Result<BTreeMap<String, String>> {
    let bad = || {
        Error::bad_arguments(format!(
            "Cannot read labels {text:?} as Map(String, String)"
        ))
    };
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(bad)?;
    let mut chars = inner.chars().peekable();
    let mut map = BTreeMap::new();
    while chars.peek().is_some() {
        let key = quoted(&mut chars).ok_or_else(bad)?;
        if chars.next() != Some(':') {
            return Err(bad());
        }
        let value = if chars.peek() == Some(&'\'') {
            quoted(&mut chars).ok_or_else(bad)?
        } else {
            let word: String = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
            if word != "NULL" {
                return Err(bad());
            }
            String::new()
        };
        map.insert(key, value);
        match chars.next() {
            None => break,
            Some(',') => continue,
            Some(_) => return Err(bad()),
        }
    }
    Ok(map)
}

fn quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    if chars.next()? != '\'' {
        return None;
    }
    let mut out = String::new();
    loop {
        match chars.next()? {
            '\\' => out.push(chars.next()?),
            '\'' => return Some(out),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use proptest::prelude::*;

    fn columns(spec: &[(&str, &str)]) -> Vec<Column> {
        spec.iter().map(|(n, t)| Column::new(*n, *t)).collect()
    }

    fn full() -> Vec<Column> {
        columns(&[
            ("name", "String"),
            ("type", "String"),
            ("help", "String"),
            ("labels", "Map(String, String)"),
            ("value", "Float64"),
            ("timestamp", "Nullable(Int64)"),
        ])
    }

    fn row(
        name: &str,
        kind: &str,
        help: &str,
        labels: &str,
        value: Value,
        ts: Value,
    ) -> Vec<Value> {
        vec![
            name.into(),
            kind.into(),
            help.into(),
            labels.into(),
            value,
            ts,
        ]
    }

    /// As chdb prints the same rows: one group per run of a name, HELP/TYPE from its first row,
    /// labels sorted and escaped, a blank line after each group, timestamp 0/NULL left out.
    #[test]
    fn groups_help_type_labels_and_timestamps_as_clickhouse() {
        let rows = vec![
            row(
                "b_metric",
                "counter",
                "Help with\nnewline",
                r#"{'z':'1','a':'x"y\\z
w'}"#,
                Value::Float(1.5),
                Value::Int(0),
            ),
            row(
                "b_metric",
                "counter",
                "",
                "{'a':'2'}",
                Value::Int(2),
                Value::Int(1_700_000_000_000),
            ),
            row(
                "a_metric",
                "gauge",
                "",
                "{}",
                Value::Float(f64::NAN),
                Value::Null,
            ),
            row(
                "a_metric",
                "gauge",
                "",
                "{}",
                Value::Float(f64::INFINITY),
                Value::Null,
            ),
            row(
                "c",
                "",
                "",
                "{}",
                Value::Float(f64::NEG_INFINITY),
                Value::Null,
            ),
            row("b_metric", "", "", "{}", Value::UInt(7), Value::Null),
        ];
        assert_eq!(
            render(&full(), &rows).unwrap(),
            "# HELP b_metric Help with newline\n# TYPE b_metric counter\n\
             b_metric{a=\"x\\\"y\\\\z\\nw\",z=\"1\"} 1.5\nb_metric{a=\"2\"} 2 1700000000000\n\n\
             # TYPE a_metric gauge\na_metric NaN\na_metric +Inf\n\n\
             c -Inf\n\n\
             b_metric 7\n\n"
        );
    }

    #[test]
    fn histogram_and_summary_sum_count_and_inf_bucket() {
        let rows = vec![
            row(
                "h",
                "histogram",
                "H",
                "{'le':'0.1'}",
                Value::Int(3),
                Value::Null,
            ),
            row(
                "h",
                "histogram",
                "",
                "{'count':''}",
                Value::Int(3),
                Value::Null,
            ),
            row(
                "h",
                "histogram",
                "",
                "{'sum':''}",
                Value::Float(0.5),
                Value::Null,
            ),
            row(
                "s",
                "summary",
                "",
                "{'quantile':'0.5'}",
                Value::Int(1),
                Value::Null,
            ),
            row(
                "s",
                "summary",
                "",
                "{'count':''}",
                Value::Int(4),
                Value::Null,
            ),
            row("s", "summary", "", "{'sum':''}", Value::Int(2), Value::Null),
        ];
        assert_eq!(
            render(&full(), &rows).unwrap(),
            "# HELP h H\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 3\nh_sum 0.5\nh_count 3\n\
             h_bucket{le=\"+Inf\"} 3\n\n\
             # TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\ns_count 4\n\n"
        );
    }

    #[test]
    fn only_name_and_value_are_required_and_other_columns_are_ignored() {
        let cols = columns(&[("other", "String"), ("value", "Int64"), ("name", "String")]);
        let rows = vec![
            vec!["x".into(), Value::Int(-5), "m".into()],
            vec!["x".into(), Value::Null, "m".into()],
        ];
        assert_eq!(render(&cols, &rows).unwrap(), "m -5\nm NaN\n\n");
        assert_eq!(render(&cols, &[]).unwrap(), "");
    }

    #[test]
    fn a_missing_or_mistyped_column_is_bad_arguments() {
        let missing = check_columns(&columns(&[("name", "String")])).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::BadArguments);
        assert_eq!(
            missing.message(),
            "Column 'value' is required for output format 'Prometheus'"
        );
        let no_name = check_columns(&columns(&[("value", "UInt8")])).unwrap_err();
        assert!(no_name.message().contains("Column 'name' is required"));
        let text_value = check_columns(&columns(&[("name", "String"), ("value", "String")]));
        assert_eq!(
            text_value.unwrap_err().message(),
            "Illegal type 'String' of column 'value' for output format 'Prometheus'"
        );
        let text_labels = columns(&[("name", "String"), ("value", "Int64"), ("labels", "String")]);
        assert!(
            render(&text_labels, &[])
                .unwrap_err()
                .message()
                .contains("Illegal type 'String' of column 'labels'")
        );
        assert!(
            check_columns(&columns(&[
                ("name", "String"),
                ("value", "Nullable(Float64)")
            ]))
            .is_ok()
        );
    }

    proptest! {
        /// A label value of any text, printed as the query layer prints a map cell, comes out of
        /// the exposition escaped: unescaping the sample's label gives the text back.
        #[test]
        fn label_values_round_trip(value in "[a-z\\\\'\"\n,:{}= ]{0,12}") {
            let cell = format!("{{'k':'{}'}}", value.replace('\\', "\\\\").replace('\'', "\\'"));
            let cols = columns(&[("name", "String"), ("labels", "Map(String, String)"), ("value", "Int64")]);
            let text = render(&cols, &[vec!["m".into(), cell.into(), Value::Int(1)]]).unwrap();
            let inside = text
                .strip_prefix("m{k=\"")
                .and_then(|t| t.strip_suffix("\"} 1\n\n"))
                .unwrap_or_else(|| panic!("{text:?}"));
            prop_assert!(!inside.contains('\n'));
            let unescaped = inside
                .replace("\\\\", "\u{0}")
                .replace("\\n", "\n")
                .replace("\\\"", "\"")
                .replace('\u{0}', "\\");
            prop_assert_eq!(unescaped, value);
        }
    }

    #[test]
    fn map_cells_parse_with_escapes_and_nulls() {
        let map = parse_map(r"{'a':'it\'s','b\\c':NULL,'d':'x,y:z'}").unwrap();
        assert_eq!(map["a"], "it's");
        assert_eq!(map["b\\c"], "");
        assert_eq!(map["d"], "x,y:z");
        assert!(parse_map("{}").unwrap().is_empty());
        for bad in ["", "{'a'}", "{'a':'b'", "{'a':x}", "{'a':'b';'c':'d'}"] {
            assert!(parse_map(bad).is_err(), "{bad:?} parsed");
        }
    }
}
