//! The text of a session file: blocks (a directive line and the lines under it up to a blank
//! line), and the `${...}` variables of SQL and expected rows.
//!
//! Variables: `${TABLE}` (the table location on the backend), `${TABLE_PARENT}` (the folder
//! holding it), `${ENGINE}` (the engine clause that
//! registers it), `${snapshot:<label>}` (a snapshot id), `${data_file:<label>}`,
//! `${delete_file:<label>}`, `${statistics_file:<label>}`, `${partition_statistics_file:<label>}`,
//! `${metadata_file:<index>}` (a file of the fixture, as a path or URI on the backend), and `${time:<base>[±<n><unit>...]}`: a UTC time `YYYY-MM-DD hh:mm:ss` (the
//! second it falls in) where base is `now` (the fixture's clock) or a snapshot label, and units are
//! `d`, `h`, `m`, `s`, `ms` (e.g. `${time:now-10d+1s}`, `${time:a3}`); `${time_ms:...}` is the
//! same with milliseconds, `YYYY-MM-DD hh:mm:ss.mmm`, as EXPLAIN prints snapshot times.
//!
#![allow(dead_code)]

/// One directive with its body.
pub struct Block {
    pub header: String,
    pub body: Vec<String>,
    /// 1-based line of the header.
    pub line: usize,
}

/// The blocks of a session file; `#` lines and blank lines between blocks are skipped.
pub fn parse_blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < lines.len() && !lines[end].trim().is_empty() {
            end += 1;
        }
        blocks.push(Block {
            header: line.to_string(),
            body: lines[i + 1..end].iter().map(|l| l.to_string()).collect(),
            line: i + 1,
        });
        i = end;
    }
    blocks
}

/// What variables resolve against.
pub trait Resolve {
    /// The value of `${key}` (`key` without the braces), or `None` when unknown.
    fn resolve(&self, key: &str) -> Option<String>;
}

/// `text` with every `${...}` replaced; panics naming an unknown variable.
pub fn substitute(text: &str, vars: &dyn Resolve, at: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let len = after
            .find('}')
            .unwrap_or_else(|| panic!("{at}: unclosed ${{ in {text:?}"));
        let key = &after[..len];
        let value = vars
            .resolve(key)
            .unwrap_or_else(|| panic!("{at}: unknown variable ${{{key}}}"));
        out.push_str(&value);
        rest = &after[len + 1..];
    }
    out.push_str(rest);
    out
}

/// Milliseconds of `<n><unit>`.
fn duration_ms(text: &str) -> Option<i64> {
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let n: i64 = text[..digits].parse().ok()?;
    let unit = match &text[digits..] {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1000,
        "ms" => 1,
        _ => return None,
    };
    Some(n * unit)
}

/// `<base>[±<n><unit>...]` as milliseconds, `base` resolved by `base_ms`.
pub fn time_expr(expr: &str, base_ms: impl Fn(&str) -> Option<i64>) -> Option<i64> {
    let split = expr.find(['+', '-']).unwrap_or(expr.len());
    let mut ms = base_ms(&expr[..split])?;
    let mut rest = &expr[split..];
    while !rest.is_empty() {
        let sign = if rest.starts_with('-') { -1 } else { 1 };
        let body = &rest[1..];
        let end = body.find(['+', '-']).unwrap_or(body.len());
        ms += sign * duration_ms(&body[..end])?;
        rest = &body[end..];
    }
    Some(ms)
}

/// `ms` as `YYYY-MM-DD hh:mm:ss` in UTC (the second it falls in).
pub fn utc_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("time in range")
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// `ms` as `YYYY-MM-DD hh:mm:ss.mmm` in UTC.
pub fn utc_text_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("time in range")
        .format("%Y-%m-%d %H:%M:%S%.3f")
        .to_string()
}

#[test]
fn time_expressions() {
    let base = |b: &str| (b == "now").then_some(1_000_000_000_500);
    assert_eq!(time_expr("now", base), Some(1_000_000_000_500));
    assert_eq!(
        time_expr("now-10d+1s", base),
        Some(1_000_000_000_500 - 864_000_000 + 1000)
    );
    assert_eq!(time_expr("now-3x", base), None);
    assert_eq!(time_expr("then", base), None);
    assert_eq!(utc_text(1_000_000_000_500), "2001-09-09 01:46:40");
    assert_eq!(utc_text_ms(1_000_000_000_500), "2001-09-09 01:46:40.500");
}

#[test]
fn blocks_and_variables() {
    struct Vars;
    impl Resolve for Vars {
        fn resolve(&self, key: &str) -> Option<String> {
            (key == "TABLE").then(|| "/t".to_string())
        }
    }
    let blocks = parse_blocks("# c\n\nquery\nSELECT 1\n----\n1\n\nstatement ok\nX\n");
    assert_eq!(blocks.len(), 2);
    assert_eq!((blocks[0].header.as_str(), blocks[0].line), ("query", 3));
    assert_eq!(blocks[0].body, ["SELECT 1", "----", "1"]);
    assert_eq!(substitute("a ${TABLE}/b", &Vars, "x"), "a /t/b");
}
