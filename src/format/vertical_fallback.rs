//! When a Pretty format prints a result as Vertical instead, as ClickHouse decides it for its
//! first block (icetrim prints every result as one block): the fallback is on, the result has at
//! most `max_rows` rows and at least `min_columns` columns, and either the columns' widths add up
//! to at least `min_table_width` or a value holds a newline. A column's width is that of its
//! widest line, its name included, each capped at ClickHouse's 250-character column padding
//! (`output_format_pretty_max_column_pad_width`); `NULL` counts as `ᴺᵁᴸᴸ`, as it prints.

use super::value::{Column, Value};

/// ClickHouse's cap on the padding of one column, which its width rule applies.
const MAX_COLUMN_PAD_WIDTH: usize = 250;

/// The four `output_format_pretty_fallback_to_vertical*` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerticalFallback {
    pub enabled: bool,
    pub max_rows: u64,
    pub min_columns: u64,
    pub min_table_width: u64,
}

impl Default for VerticalFallback {
    /// ClickHouse's defaults (26.9): on, 10 rows, 5 columns, 250 characters.
    fn default() -> Self {
        VerticalFallback {
            enabled: true,
            max_rows: 10,
            min_columns: 5,
            min_table_width: 250,
        }
    }
}

impl VerticalFallback {
    /// No fallback at all.
    pub const OFF: VerticalFallback = VerticalFallback {
        enabled: false,
        max_rows: 0,
        min_columns: 0,
        min_table_width: 0,
    };

    /// Whether `rows` under `columns` print as Vertical rather than in a Pretty frame.
    pub fn applies(&self, columns: &[Column], rows: &[Vec<Value>]) -> bool {
        if !self.enabled || rows.is_empty() {
            return false;
        }
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        if count(rows.len()) > self.max_rows || count(columns.len()) < self.min_columns {
            return false;
        }
        let mut has_newline = false;
        let mut table_width = 0usize;
        for (i, column) in columns.iter().enumerate() {
            let mut widest = width(&column.name);
            for value in rows.iter().filter_map(|row| row.get(i)) {
                let text = shown(value);
                has_newline |= text.contains('\n');
                let line_width = text.split('\n').map(width).max().unwrap_or(0);
                widest = widest.max(line_width.min(MAX_COLUMN_PAD_WIDTH));
            }
            table_width = table_width.saturating_add(widest.min(MAX_COLUMN_PAD_WIDTH));
        }
        has_newline || count(table_width) >= self.min_table_width
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::Null => "ᴺᵁᴸᴸ".to_string(),
        other => other.to_string(),
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(widths: &[usize], rows: usize) -> (Vec<Column>, Vec<Vec<Value>>) {
        let columns = (0..widths.len())
            .map(|i| Column::new(format!("c{i}"), "String"))
            .collect();
        let row: Vec<Value> = widths.iter().map(|w| Value::Str("x".repeat(*w))).collect();
        (columns, vec![row; rows])
    }

    /// The boundaries chdb shows: five columns of 50 fall back, 50+50+50+50+49 does not.
    #[test]
    fn width_boundary() {
        let rule = VerticalFallback::default();
        let (c, r) = result(&[50, 50, 50, 50, 50], 2);
        assert!(rule.applies(&c, &r));
        let (c, r) = result(&[50, 50, 50, 50, 49], 2);
        assert!(!rule.applies(&c, &r));
    }

    #[test]
    fn rows_and_columns_boundaries() {
        let rule = VerticalFallback::default();
        let (c, r) = result(&[60, 60, 60, 60, 60], 10);
        assert!(rule.applies(&c, &r), "10 rows is still small");
        let (c, r) = result(&[60, 60, 60, 60, 60], 11);
        assert!(!rule.applies(&c, &r), "11 rows is not");
        let (c, r) = result(&[100, 100, 100, 100], 1);
        assert!(!rule.applies(&c, &r), "four columns never fall back");
        assert!(!VerticalFallback::OFF.applies(&result(&[300; 5], 1).0, &result(&[300; 5], 1).1));
    }

    /// A column's width counts its name; one value wider than 250 counts as 250.
    #[test]
    fn names_count_and_widths_are_capped() {
        let rule = VerticalFallback::default();
        let columns: Vec<Column> = (0..5)
            .map(|i| Column::new(format!("{i}{}", "n".repeat(49)), "String"))
            .collect();
        let rows = vec![vec![Value::Str("x".into()); 5]];
        assert!(rule.applies(&columns, &rows), "5 names of 50");
        let rule = VerticalFallback {
            min_table_width: 259,
            ..rule
        };
        let (c, r) = result(&[1000, 2, 2, 2, 2], 1);
        assert!(!rule.applies(&c, &r), "1000 counts as 250: 258 < 259");
        let (c, r) = result(&[1000, 2, 2, 2, 3], 1);
        assert!(rule.applies(&c, &r));
    }

    #[test]
    fn a_newline_is_enough() {
        let rule = VerticalFallback::default();
        let (c, mut r) = result(&[1, 1, 1, 1, 1], 1);
        assert!(!rule.applies(&c, &r));
        r[0][4] = Value::Str("x\ny".into());
        assert!(rule.applies(&c, &r));
        assert!(!rule.applies(&c[..4], &[r[0][..4].to_vec()]));
    }
}
