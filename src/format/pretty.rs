//! ClickHouse's Pretty and PrettyCompact frames, drawn by hand: the column name sits inside the top
//! border, rows are numbered (`1. `), numbers are right-aligned, and a multi-line cell continues on
//! the next line with `↴` / `↳`. comfy-table cannot draw that frame (header names inside the border,
//! a different vertical rule for the header row), so it is not used here.

use super::value::{Column, Value};

const NULL_TEXT: &str = "ᴺᵁᴸᴸ";

/// Which Pretty variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    Compact,
    Full,
}

struct Cell {
    lines: Vec<String>,
    right: bool,
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn cell_of(v: &Value) -> Cell {
    let text = match v {
        Value::Null => NULL_TEXT.to_string(),
        other => other.to_string(),
    };
    Cell {
        lines: text.split('\n').map(str::to_string).collect(),
        right: v.is_numeric(),
    }
}

fn pad(text: &str, w: usize, right: bool) -> String {
    let fill = " ".repeat(w.saturating_sub(width(text)));
    if right {
        format!("{fill}{text}")
    } else {
        format!("{text}{fill}")
    }
}

/// Render `rows` under `columns` in a Pretty frame. No rows print nothing at all, as ClickHouse
/// does.
pub fn render(columns: &[Column], rows: &[Vec<Value>], frame: Frame) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| r.iter().map(cell_of).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let body = cells
                .iter()
                .filter_map(|r| r.get(i))
                .flat_map(|c| c.lines.iter().map(|l| width(l)))
                .max()
                .unwrap_or(0);
            body.max(width(&c.name))
        })
        .collect();
    let number_width = rows.len().to_string().len() + 2;
    let indent = " ".repeat(number_width);
    let mut out = String::new();
    match frame {
        Frame::Compact => {
            out.push_str(&indent);
            out.push('┌');
            let parts: Vec<String> = columns
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("─{}{}─", c.name, "─".repeat(w - width(&c.name))))
                .collect();
            out.push_str(&parts.join("┬"));
            out.push_str("┐\n");
        }
        Frame::Full => {
            let rule = |l: &str, m: &str, r: &str| {
                let parts: Vec<String> = widths.iter().map(|w| "━".repeat(w + 2)).collect();
                format!("{indent}{l}{}{r}\n", parts.join(m))
            };
            out.push_str(&rule("┏", "┳", "┓"));
            let names: Vec<String> = columns
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!(" {} ", pad(&c.name, *w, false)))
                .collect();
            out.push_str(&format!("{indent}┃{}┃\n", names.join("┃")));
            out.push_str(&rule("┡", "╇", "┩"));
        }
    }
    for (n, row) in cells.iter().enumerate() {
        if frame == Frame::Full && n > 0 {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            out.push_str(&format!("{indent}├{}┤\n", parts.join("┼")));
        }
        push_row(&mut out, n + 1, number_width, row, &widths);
    }
    let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
    out.push_str(&format!("{indent}└{}┘\n", parts.join("┴")));
    out
}

fn push_row(out: &mut String, number: usize, number_width: usize, row: &[Cell], widths: &[usize]) {
    let height = row.iter().map(|c| c.lines.len()).max().unwrap_or(1);
    for line in 0..height {
        if line == 0 {
            out.push_str(&pad(&format!("{number}. "), number_width, true));
        } else {
            out.push_str(&" ".repeat(number_width));
        }
        out.push('│');
        for (i, w) in widths.iter().enumerate() {
            let cell = row.get(i);
            let text = cell
                .and_then(|c| c.lines.get(line))
                .map_or("", String::as_str);
            let continues = cell.is_some_and(|c| line + 1 < c.lines.len());
            let continued = line > 0 && cell.is_some_and(|c| line < c.lines.len());
            let right = cell.is_some_and(|c| c.right);
            out.push(if continued { '↳' } else { ' ' });
            out.push_str(&pad(text, *w, right));
            out.push(if continues { '↴' } else { ' ' });
            out.push('│');
        }
        out.push('\n');
    }
}
