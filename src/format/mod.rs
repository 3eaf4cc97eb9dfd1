//! Output formats: how a result (columns and rows) is printed, exactly as ClickHouse prints it.
//! `TabSeparated` is the default for scripts, `PrettyCompact` for a terminal. Pretty formats fall
//! back to Vertical for a few wide rows ([`VerticalFallback`]) and show paths relative to their
//! folder ([`relative_to_location`]); the shell applies both.

mod describe;
mod pretty;
pub(crate) mod prometheus;
mod relative_paths;
mod text;
mod value;
mod vertical_fallback;

pub(crate) use describe::{describe_columns, describe_row};
pub use relative_paths::relative_to_location;
pub use value::{Column, Value};
pub use vertical_fallback::VerticalFallback;

use crate::error::{Error, ErrorKind, Result};

/// The formats icetrim prints (`FORMAT <name>` or `--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputFormat {
    PrettyCompact,
    Pretty,
    TabSeparated,
    TabSeparatedWithNames,
    Csv,
    CsvWithNames,
    JsonEachRow,
    Json,
    Vertical,
    Markdown,
    Prometheus,
}

impl OutputFormat {
    /// Every format with its canonical name.
    pub const ALL: [(OutputFormat, &'static str); 11] = [
        (OutputFormat::PrettyCompact, "PrettyCompact"),
        (OutputFormat::Pretty, "Pretty"),
        (OutputFormat::TabSeparated, "TabSeparated"),
        (OutputFormat::TabSeparatedWithNames, "TabSeparatedWithNames"),
        (OutputFormat::Csv, "CSV"),
        (OutputFormat::CsvWithNames, "CSVWithNames"),
        (OutputFormat::JsonEachRow, "JSONEachRow"),
        (OutputFormat::Json, "JSON"),
        (OutputFormat::Vertical, "Vertical"),
        (OutputFormat::Markdown, "Markdown"),
        (OutputFormat::Prometheus, "Prometheus"),
    ];

    /// Other names ClickHouse accepts for these formats.
    const ALIASES: [(&'static str, OutputFormat); 3] = [
        ("TSV", OutputFormat::TabSeparated),
        ("TSVWithNames", OutputFormat::TabSeparatedWithNames),
        ("MD", OutputFormat::Markdown),
    ];

    /// Look a format up by name, ignoring case; `TSV`, `TSVWithNames` and `MD` are aliases. An
    /// unknown name is ClickHouse's `Unknown format X. Maybe you meant: [...]` (`UNKNOWN_FORMAT`),
    /// the hints chosen as ClickHouse chooses them among the names and aliases.
    pub fn from_name(name: &str) -> Result<Self> {
        let known = Self::ALL.iter().map(|(f, n)| (*n, *f)).chain(Self::ALIASES);
        for (known_name, format) in known {
            if known_name.eq_ignore_ascii_case(name) {
                return Ok(format);
            }
        }
        let names = Self::ALL
            .iter()
            .map(|(_, n)| *n)
            .chain(Self::ALIASES.iter().map(|(n, _)| *n));
        let hints = crate::hints::closest(name, names, crate::hints::MAX_HINTS);
        Err(Error::new(
            ErrorKind::UnknownFormat,
            format!(
                "Unknown format {name}{}",
                crate::hints::maybe_you_meant(&hints)
            ),
        ))
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("TabSeparated", |(_, n)| n)
    }

    /// Whether a result of `columns` can be printed in this format: `Prometheus` needs columns
    /// `name` and `value` (and optional `help`, `type`, `labels`, `timestamp` of the right types);
    /// every other format prints anything.
    pub fn check_columns(self, columns: &[Column]) -> Result<()> {
        match self {
            OutputFormat::Prometheus => prometheus::check_columns(columns),
            _ => Ok(()),
        }
    }

    /// Render a result. `elapsed_seconds` only appears in `JSON`'s statistics. `Prometheus`
    /// expects columns [`check_columns`](Self::check_columns) accepted; otherwise it prints the
    /// error, as a comment line.
    pub fn render(self, columns: &[Column], rows: &[Vec<Value>], elapsed_seconds: f64) -> String {
        match self {
            OutputFormat::PrettyCompact => pretty::render(columns, rows, pretty::Frame::Compact),
            OutputFormat::Pretty => pretty::render(columns, rows, pretty::Frame::Full),
            OutputFormat::TabSeparated => {
                text::delimited(columns, rows, "\t", false, text::tsv_field)
            }
            OutputFormat::TabSeparatedWithNames => {
                text::delimited(columns, rows, "\t", true, text::tsv_field)
            }
            OutputFormat::Csv => text::delimited(columns, rows, ",", false, text::csv_field),
            OutputFormat::CsvWithNames => {
                text::delimited(columns, rows, ",", true, text::csv_field)
            }
            OutputFormat::JsonEachRow => text::json_each_row(columns, rows),
            OutputFormat::Json => text::json_document(columns, rows, elapsed_seconds),
            OutputFormat::Vertical => text::vertical(columns, rows),
            OutputFormat::Markdown => text::markdown(columns, rows),
            OutputFormat::Prometheus => prometheus::render(columns, rows)
                .unwrap_or_else(|error| format!("# {}\n", error.message())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<Column>, Vec<Vec<Value>>) {
        let cols = vec![
            Column::new("metric_name", "String"),
            Column::new("metric_value", "Int64"),
            Column::new("n", "Nullable(String)"),
        ];
        let rows = vec![
            vec![
                "deleted_data_files_count".into(),
                Value::Int(12),
                Value::Null,
            ],
            vec!["a\tb\\c'd\"e\nf".into(), Value::Int(12), Value::Null],
        ];
        (cols, rows)
    }

    #[test]
    fn tab_separated_escapes_like_clickhouse() {
        let (c, r) = sample();
        assert_eq!(
            OutputFormat::TabSeparated.render(&c, &r, 0.0),
            "deleted_data_files_count\t12\t\\N\na\\tb\\\\c\\'d\"e\\nf\t12\t\\N\n"
        );
    }

    #[test]
    fn csv_quotes_strings_only() {
        let (c, r) = sample();
        assert_eq!(
            OutputFormat::CsvWithNames.render(&c, &r, 0.0),
            "\"metric_name\",\"metric_value\",\"n\"\n\"deleted_data_files_count\",12,\\N\n\"a\tb\\c'd\"\"e\nf\",12,\\N\n"
        );
    }

    #[test]
    fn json_each_row() {
        let (c, r) = sample();
        assert_eq!(
            OutputFormat::JsonEachRow.render(&c, &r[..1], 0.0),
            "{\"metric_name\":\"deleted_data_files_count\",\"metric_value\":12,\"n\":null}\n"
        );
    }

    #[test]
    fn pretty_compact_frame() {
        let (c, mut r) = sample();
        r[1][0] = "a\nbb".into();
        let expected = "   ┌─metric_name──────────────┬─metric_value─┬─n────┐\n\
                        1. │ deleted_data_files_count │           12 │ ᴺᵁᴸᴸ │\n\
                        2. │ a                       ↴│           12 │ ᴺᵁᴸᴸ │\n   \
                        │↳bb                       │              │      │\n   \
                        └──────────────────────────┴──────────────┴──────┘\n";
        assert_eq!(OutputFormat::PrettyCompact.render(&c, &r, 0.0), expected);
    }

    #[test]
    fn pretty_prints_nothing_for_no_rows() {
        let (c, _) = sample();
        assert_eq!(OutputFormat::PrettyCompact.render(&c, &[], 0.0), "");
        assert_eq!(OutputFormat::Pretty.render(&c, &[], 0.0), "");
    }

    #[test]
    fn vertical_blocks() {
        let (c, r) = sample();
        assert_eq!(
            OutputFormat::Vertical.render(&c, &r[..1], 0.0),
            "Row 1:\n──────\nmetric_name:  deleted_data_files_count\nmetric_value: 12\nn:            ᴺᵁᴸᴸ\n"
        );
    }

    /// As chdb prints `SELECT 1 a, 'x|y' b, NULL c, 'p\nq' d ... FORMAT Markdown`: numbers
    /// right-aligned by type, text with TabSeparated's escaping, `|` as it is.
    #[test]
    fn markdown_as_clickhouse() {
        let columns = vec![
            Column::new("a", "UInt8"),
            Column::new("b", "String"),
            Column::new("c", "Nullable(Int8)"),
            Column::new("d", "String"),
        ];
        let rows = vec![
            vec![Value::UInt(1), "x|y".into(), Value::Null, "p\nq".into()],
            vec![Value::UInt(22), "z".into(), Value::Int(3), "r".into()],
        ];
        assert_eq!(
            OutputFormat::Markdown.render(&columns, &rows, 0.0),
            "| a | b | c | d |\n|-:|:-|-:|:-|\n| 1 | x|y | \\N | p\\nq |\n| 22 | z | 3 | r |\n"
        );
        assert_eq!(
            OutputFormat::Markdown.render(&columns[..1], &[], 0.0),
            "| a |\n|-:|\n",
            "no rows: the header alone"
        );
    }

    #[test]
    fn names_and_aliases() {
        assert_eq!(
            OutputFormat::from_name("TSV").ok(),
            Some(OutputFormat::TabSeparated)
        );
        assert_eq!(
            OutputFormat::from_name("jsoneachrow").ok(),
            Some(OutputFormat::JsonEachRow)
        );
        let err = OutputFormat::from_name("Parquet").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnknownFormat);
        assert_eq!(
            err.to_string(),
            "Code: 73. DB::Exception: Unknown format Parquet. (UNKNOWN_FORMAT)"
        );
        assert_eq!(
            OutputFormat::from_name("Markdwn").unwrap_err().to_string(),
            "Code: 73. DB::Exception: Unknown format Markdwn. Maybe you meant: ['Markdown']. \
             (UNKNOWN_FORMAT)"
        );
        assert_eq!(
            OutputFormat::from_name("CSVWithName")
                .unwrap_err()
                .message(),
            "Unknown format CSVWithName. Maybe you meant: ['CSVWithNames','TSVWithNames']"
        );
        assert_eq!(
            OutputFormat::from_name("md").ok(),
            Some(OutputFormat::Markdown)
        );
        for (f, n) in OutputFormat::ALL {
            assert_eq!(OutputFormat::from_name(n).ok(), Some(f));
        }
    }
}
