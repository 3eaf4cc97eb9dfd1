//! Splitting a script into statements on `;`.
//!
//! A `;` ends a statement only outside `'strings'` (with `''` and `\'` escapes), `"identifiers"` and
//! `` `identifiers` `` (doubled quote or backslash escapes), `-- line comments`, `# line comments`
//! (a `#` followed by a space, as ClickHouse's dialect reads them) and `/* block comments */` (which
//! nest, as in ClickHouse). A last statement without `;` counts. Pieces holding only whitespace and
//! comments are dropped.

/// One statement of a script: its text (a slice of the script, without the `;`, surrounding
/// whitespace trimmed) and the 1-based line its text starts on. The script is read byte by byte
/// (every delimiter is ASCII) and nothing is copied.
pub fn split_statements(script: &str) -> Vec<(&str, usize)> {
    let bytes = script.as_bytes();
    let mut statements = Vec::new();
    let mut current = Piece::default();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let end = match b {
            b';' => {
                current.finish(script, i, &mut statements);
                i += 1;
                continue;
            }
            b'\'' | b'"' | b'`' => {
                current.has_code = true;
                quoted_end(bytes, i, b)
            }
            b'-' if next == Some(b'-') => line_end(bytes, i),
            b'#' if matches!(next, Some(b' ' | b'!')) => line_end(bytes, i),
            b'/' if next == Some(b'*') => block_comment_end(bytes, i),
            _ => {
                let c = script[i..].chars().next().unwrap_or(' ');
                if !c.is_whitespace() {
                    current.has_code = true;
                }
                i + c.len_utf8()
            }
        };
        let end = end.min(bytes.len());
        if current.start.is_none() && !script[i..].starts_with(char::is_whitespace) {
            current.start = Some((i, line));
        }
        line += bytes[i..end].iter().filter(|&&b| b == b'\n').count();
        i = end;
    }
    current.finish(script, bytes.len(), &mut statements);
    statements
}

/// The statement being read.
#[derive(Default)]
struct Piece {
    /// Byte offset and line of its first non-whitespace character.
    start: Option<(usize, usize)>,
    /// Whether it holds anything besides whitespace and comments.
    has_code: bool,
}

impl Piece {
    /// Ends the piece at byte `end`, keeping it when it holds code.
    fn finish<'a>(&mut self, script: &'a str, end: usize, out: &mut Vec<(&'a str, usize)>) {
        if let (true, Some((start, line))) = (self.has_code, self.start) {
            out.push((script[start..end].trim_end(), line));
        }
        *self = Piece::default();
    }
}

/// Index just past the quoted run that starts at `start` with `quote`.
fn quoted_end(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Index of the newline ending the line comment at `start` (or the end of the text).
fn line_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| start + p)
}

/// Index just past the (possibly nested) block comment that starts at `start`.
fn block_comment_end(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(script: &str) -> Vec<&str> {
        split_statements(script)
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn splits_on_semicolons_and_keeps_a_trailing_statement() {
        assert_eq!(texts("USE a; USE b;USE c"), ["USE a", "USE b", "USE c"]);
    }

    #[test]
    fn semicolons_inside_strings_identifiers_and_comments_do_not_split() {
        let script = "SET a = 'x;''y\\';z'; SELECT \"c;d\", `e;f` FROM system.iceberg_refs -- g;h\n;\
                      /* i; /* nested; */ j; */ USE k";
        assert_eq!(
            texts(script),
            [
                "SET a = 'x;''y\\';z'",
                "SELECT \"c;d\", `e;f` FROM system.iceberg_refs -- g;h",
                "/* i; /* nested; */ j; */ USE k",
            ]
        );
    }

    #[test]
    fn reports_start_lines_and_drops_comment_only_pieces() {
        let script = "\n\nUSE a;\n-- only a comment;\n;\n  USE\nb;  ";
        assert_eq!(split_statements(script), vec![("USE a", 3), ("USE\nb", 6)]);
    }

    #[test]
    fn unterminated_quote_swallows_the_rest() {
        assert_eq!(texts("SET a = 'x; USE b"), ["SET a = 'x; USE b"]);
    }

    #[test]
    fn hash_comments_need_a_space() {
        assert_eq!(texts("USE a # c;d\n; USE b"), ["USE a # c;d", "USE b"]);
    }
}
