//! Splitting a script into statements on `;`.
//!
//! A `;` ends a statement only outside `'strings'` (with `''` and `\'` escapes), `"identifiers"` and
//! `` `identifiers` `` (doubled quote or backslash escapes), `-- line comments`, `# line comments`
//! (a `#` followed by a space, as ClickHouse's dialect reads them) and `/* block comments */` (which
//! nest, as in ClickHouse). A last statement without `;` counts. Pieces holding only whitespace and
//! comments are dropped.

/// One statement of a script: its text (without the `;`, surrounding whitespace trimmed) and the
/// 1-based line its text starts on.
pub fn split_statements(script: &str) -> Vec<(String, usize)> {
    let mut splitter = Splitter::default();
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        i = splitter.step(&chars, i);
    }
    splitter.finish_statement();
    splitter.statements
}

#[derive(Default)]
struct Splitter {
    statements: Vec<(String, usize)>,
    current: String,
    /// Line of the current position (0-based count of newlines seen).
    newlines: usize,
    /// Line where the current statement's first non-whitespace character is.
    start_line: Option<usize>,
    /// Whether the current piece holds anything besides whitespace and comments.
    has_code: bool,
}

impl Splitter {
    /// Consumes one token-ish unit starting at `i` and returns the next index.
    fn step(&mut self, chars: &[char], i: usize) -> usize {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            ';' => {
                self.finish_statement();
                i + 1
            }
            '\'' | '"' | '`' => {
                self.has_code = true;
                let end = quoted_end(chars, i, c);
                self.take(chars, i, end)
            }
            '-' if next == Some('-') => self.take(chars, i, line_end(chars, i)),
            '#' if next.is_some_and(|n| n == ' ' || n == '!') => {
                self.take(chars, i, line_end(chars, i))
            }
            '/' if next == Some('*') => self.take(chars, i, block_comment_end(chars, i)),
            _ => {
                if !c.is_whitespace() {
                    self.has_code = true;
                }
                self.take(chars, i, i + 1)
            }
        }
    }

    /// Appends `chars[from..to]` to the current statement, tracking lines.
    fn take(&mut self, chars: &[char], from: usize, to: usize) -> usize {
        let to = to.min(chars.len());
        for &c in &chars[from..to] {
            if self.start_line.is_none() && !c.is_whitespace() {
                self.start_line = Some(self.newlines + 1);
            }
            if c == '\n' {
                self.newlines += 1;
            }
            if self.start_line.is_some() {
                self.current.push(c);
            }
        }
        to
    }

    fn finish_statement(&mut self) {
        let text = std::mem::take(&mut self.current);
        if let (true, Some(line)) = (self.has_code, self.start_line) {
            self.statements.push((text.trim_end().to_string(), line));
        }
        self.start_line = None;
        self.has_code = false;
    }
}

/// Index just past the quoted run that starts at `start` with `quote`.
fn quoted_end(chars: &[char], start: usize, quote: char) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => {
                if chars.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// Index of the newline ending the line comment at `start` (or the end of the text).
fn line_end(chars: &[char], start: usize) -> usize {
    chars[start..]
        .iter()
        .position(|&c| c == '\n')
        .map_or(chars.len(), |p| start + p)
}

/// Index just past the (possibly nested) block comment that starts at `start`.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(script: &str) -> Vec<String> {
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
        assert_eq!(
            split_statements(script),
            vec![("USE a".to_string(), 3), ("USE\nb".to_string(), 6)]
        );
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
