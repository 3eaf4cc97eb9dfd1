//! ClickHouse's text formats: TabSeparated (+WithNames), CSV (+WithNames), JSONEachRow, JSON and
//! Vertical and Markdown, with ClickHouse's escaping (checked against ClickHouse 26.9 output).

use super::value::{Column, Value};

/// TabSeparated escaping: backslash, tab, newline, carriage return, NUL, backspace, form feed and
/// the single quote get a backslash; NULL is `\N`.
pub fn tsv_field(v: &Value) -> String {
    match v {
        Value::Null => "\\N".to_string(),
        Value::Str(s) => {
            let mut out = String::with_capacity(s.len());
            for ch in s.chars() {
                match ch {
                    '\\' => out.push_str("\\\\"),
                    '\t' => out.push_str("\\t"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\0' => out.push_str("\\0"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '\'' => out.push_str("\\'"),
                    c => out.push(c),
                }
            }
            out
        }
        other => other.to_string(),
    }
}

/// CSV: strings in double quotes with `"` doubled; numbers bare; NULL is `\N`.
pub fn csv_field(v: &Value) -> String {
    match v {
        Value::Null => "\\N".to_string(),
        Value::Str(s) => format!("\"{}\"", s.replace('"', "\"\"")),
        other => other.to_string(),
    }
}

/// A JSON value as ClickHouse writes it (64-bit integers bare, as 26.9 does by default).
pub fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Str(s) => serde_json::Value::String(s.clone()).to_string(),
        Value::Float(f) if !f.is_finite() => "null".to_string(),
        other => other.to_string(),
    }
}

/// Rows joined by `sep`, each field rendered by `field`, optionally under a line of names.
pub fn delimited(
    columns: &[Column],
    rows: &[Vec<Value>],
    sep: &str,
    with_names: bool,
    field: fn(&Value) -> String,
) -> String {
    let mut out = String::new();
    if with_names {
        let names: Vec<String> = columns
            .iter()
            .map(|c| field(&Value::Str(c.name.clone())))
            .collect();
        out.push_str(&names.join(sep));
        out.push('\n');
    }
    for row in rows {
        let fields: Vec<String> = row.iter().map(field).collect();
        out.push_str(&fields.join(sep));
        out.push('\n');
    }
    out
}

/// One JSON object per row.
pub fn json_each_row(columns: &[Column], rows: &[Vec<Value>]) -> String {
    let mut out = String::new();
    for row in rows {
        let fields: Vec<String> = columns
            .iter()
            .zip(row)
            .map(|(c, v)| {
                format!(
                    "{}:{}",
                    json_value(&Value::Str(c.name.clone())),
                    json_value(v)
                )
            })
            .collect();
        out.push('{');
        out.push_str(&fields.join(","));
        out.push_str("}\n");
    }
    out
}

/// The `JSON` format: meta, data, rows and statistics, tab-indented as ClickHouse prints it.
pub fn json_document(columns: &[Column], rows: &[Vec<Value>], elapsed_seconds: f64) -> String {
    let name = |c: &Column| json_value(&Value::Str(c.name.clone()));
    let meta: Vec<String> = columns
        .iter()
        .map(|c| {
            format!(
                "\t\t{{\n\t\t\t\"name\": {},\n\t\t\t\"type\": {}\n\t\t}}",
                name(c),
                json_value(&Value::Str(c.type_name.clone()))
            )
        })
        .collect();
    let data: Vec<String> = rows
        .iter()
        .map(|row| {
            let fields: Vec<String> = columns
                .iter()
                .zip(row)
                .map(|(c, v)| format!("\t\t\t{}: {}", name(c), json_value(v)))
                .collect();
            format!("\t\t{{\n{}\n\t\t}}", fields.join(",\n"))
        })
        .collect();
    format!(
        "{{\n\t\"meta\":\n\t[\n{}\n\t],\n\n\t\"data\":\n\t[\n{}\n\t],\n\n\t\"rows\": {},\n\n\t\"statistics\":\n\t{{\n\t\t\"elapsed\": {},\n\t\t\"rows_read\": {},\n\t\t\"bytes_read\": 0\n\t}}\n}}\n",
        meta.join(",\n"),
        data.join(",\n"),
        rows.len(),
        elapsed_seconds,
        rows.len()
    )
}

/// `Row N:` blocks with one `name: value` line per column.
pub fn vertical(columns: &[Column], rows: &[Vec<Value>]) -> String {
    let name_width = columns
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        + 2;
    let mut blocks = Vec::with_capacity(rows.len());
    for (n, row) in rows.iter().enumerate() {
        let title = format!("Row {}:", n + 1);
        let mut block = format!("{title}\n{}\n", "─".repeat(title.chars().count()));
        for (c, v) in columns.iter().zip(row) {
            let label = format!("{}:", c.name);
            let text = match v {
                Value::Null => "ᴺᵁᴸᴸ".to_string(),
                other => other.to_string(),
            };
            let fill = " ".repeat(name_width.saturating_sub(label.chars().count()));
            block.push_str(&format!("{label}{fill}{text}\n"));
        }
        blocks.push(block);
    }
    blocks.join("\n")
}

/// ClickHouse's Markdown table: a header row, an alignment row (`-:` for numeric column types,
/// `:-` for the others), then one row per line with TabSeparated's escaping (`|` is not escaped,
/// as ClickHouse leaves it).
pub fn markdown(columns: &[Column], rows: &[Vec<Value>]) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(columns.iter().map(|c| c.name.clone()).collect());
    let aligns: Vec<&str> = columns
        .iter()
        .map(|c| {
            if is_numeric_type(&c.type_name) {
                "-:"
            } else {
                ":-"
            }
        })
        .collect();
    out.push_str(&format!("|{}|\n", aligns.join("|")));
    for row in rows {
        out.push_str(&line(row.iter().map(tsv_field).collect()));
    }
    out
}

/// Whether a ClickHouse type name is a number type (inside `Nullable(…)` or `LowCardinality(…)`).
fn is_numeric_type(type_name: &str) -> bool {
    let mut inner = type_name;
    for wrapper in ["LowCardinality(", "Nullable("] {
        if let Some(rest) = inner.strip_prefix(wrapper) {
            inner = rest;
        }
    }
    ["Int", "UInt", "Float", "Decimal"]
        .iter()
        .any(|prefix| inner.starts_with(prefix))
}
