//! icetrim's own lexer: the statement text as a stream of tokens that are byte ranges of the text
//! (nothing is copied, nothing is kept), following the ClickHouse dialect of sqlparser's tokenizer.
//!
//! It serves what must not depend on sqlparser's tokenizer, which builds a vector of owned tokens
//! of ~90 bytes each for a whole statement: the size and depth limits ([`super::limits`]), and the
//! parsers of the long flat forms (literal lists, `WHERE` conjunctions, `where` predicates) that
//! read a statement in one pass ([`super::fast`]). Tokens it cannot vouch for are marked
//! [`Kind::Unusual`] (a number with a radix prefix or a letter glued to it, a character outside
//! the dialect): the fast parsers leave such statements to sqlparser.
//!
//! Rules (sqlparser's ClickHouse dialect): whitespace is space, tab, CR, LF; `--` and `# ` / `#!`
//! start line comments; `/* */` comments nest; `'strings'` take `''` and backslash escapes;
//! `` `identifiers` `` and `"identifiers"` take a doubled quote; identifiers are `[A-Za-z_]`
//! followed by `[A-Za-z0-9_$]`.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Whitespace,
    Comment,
    /// A bare word: an identifier or a keyword.
    Word,
    /// `` `name` `` or `"name"`.
    QuotedIdent,
    /// `'text'`.
    String,
    /// Digits with optional `_` separators, fraction and exponent.
    Number,
    Punct(Punct),
    /// A token the fast parsers do not read (sqlparser decides what it is).
    Unusual,
    /// A string, quoted identifier or comment that the text ends inside.
    Unterminated,
}

/// Punctuation and operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Punct {
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Semicolon,
    Period,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    /// `=`.
    Eq,
    /// `==`.
    DoubleEq,
    /// `!=` or `<>`.
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// `=>`.
    FatArrow,
    /// Any other operator character sequence (`||`, `::`, `->`, `<<`, `&`, …).
    Other,
}

impl Punct {
    /// Whether the token combines two operands (a chain of them nests sqlparser's tree).
    pub fn is_binary_operator(self) -> bool {
        !matches!(
            self,
            Punct::LParen
                | Punct::RParen
                | Punct::LBracket
                | Punct::RBracket
                | Punct::Comma
                | Punct::Semicolon
                | Punct::FatArrow
        )
    }
}

/// A token: its kind and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The token's text.
    pub fn text<'a>(&self, sql: &'a str) -> &'a str {
        sql.get(self.start..self.end).unwrap_or_default()
    }

    /// Whether the token is the bare word `word` (any case).
    pub fn is_word(&self, sql: &str, word: &str) -> bool {
        self.kind == Kind::Word && self.text(sql).eq_ignore_ascii_case(word)
    }

    /// Whether the token is a comment or whitespace.
    pub fn is_trivia(&self) -> bool {
        matches!(self.kind, Kind::Whitespace | Kind::Comment)
    }
}

/// The tokens of a text, whitespace and comments included, in order.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Lexer { text, pos: 0 }
    }

    /// Starts at byte `pos` of `text` (a token boundary).
    pub fn at(text: &'a str, pos: usize) -> Self {
        Lexer { text, pos }
    }

    /// The next token that is not whitespace or a comment; an empty token of kind
    /// [`Kind::Whitespace`] at the end of the text when there is none.
    pub fn next_significant(&mut self) -> Token {
        loop {
            match self.next() {
                Some(token) if token.is_trivia() => continue,
                Some(token) => return token,
                None => {
                    return Token {
                        kind: Kind::Whitespace,
                        start: self.text.len(),
                        end: self.text.len(),
                    };
                }
            }
        }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.text.as_bytes().get(at).copied()
    }

    fn take(&mut self, kind: Kind, end: usize) -> Token {
        let token = Token {
            kind,
            start: self.pos,
            end: end.min(self.text.len()),
        };
        self.pos = token.end;
        token
    }

    fn punct(&mut self, punct: Punct, len: usize) -> Token {
        self.take(Kind::Punct(punct), self.pos + len)
    }

    fn whitespace_end(&self) -> usize {
        let bytes = self.text.as_bytes();
        let mut end = self.pos;
        while matches!(bytes.get(end), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            end += 1;
        }
        end
    }

    fn line_end(&self) -> usize {
        self.text[self.pos..]
            .find('\n')
            .map_or(self.text.len(), |p| self.pos + p + 1)
    }

    /// The end of the nested block comment starting here, or `None` when it is not closed.
    fn block_comment_end(&self) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        let mut i = self.pos;
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
                        return Some(i);
                    }
                }
                _ => i += 1,
            }
        }
        None
    }

    /// The end of the quoted run starting here with `quote`, or `None` when it is not closed.
    /// Strings take backslash escapes; identifiers only the doubled quote.
    fn quoted_end(&self, quote: u8, backslash: bool) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let mut i = self.pos + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if backslash => i += 2,
                b if b == quote => {
                    if bytes.get(i + 1) == Some(&quote) {
                        i += 2;
                    } else {
                        return Some(i + 1);
                    }
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Digits with `_` between them, an optional fraction and exponent. Unusual when a letter,
    /// `$` or `.` is glued to the end, or on a radix prefix.
    fn number(&mut self) -> Token {
        let bytes = self.text.as_bytes();
        let digits = |mut i: usize| {
            while i < bytes.len()
                && (bytes[i].is_ascii_digit()
                    || (bytes[i] == b'_' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
            i
        };
        let mut end = digits(self.pos);
        if bytes.get(end) == Some(&b'.') {
            end = digits(end + 1);
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            let mut exp = end + 1;
            if matches!(bytes.get(exp), Some(b'+' | b'-')) {
                exp += 1;
            }
            if bytes.get(exp).is_some_and(u8::is_ascii_digit) {
                end = digits(exp);
            }
        }
        let glued = bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'));
        let radix = bytes.get(self.pos) == Some(&b'0')
            && matches!(
                bytes.get(self.pos + 1),
                Some(b'x' | b'X' | b'b' | b'B' | b'o' | b'O')
            );
        if glued || radix {
            let mut end = end;
            while bytes
                .get(end)
                .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))
            {
                end += 1;
            }
            return self.take(Kind::Unusual, end);
        }
        self.take(Kind::Number, end)
    }

    fn word(&mut self) -> Token {
        let bytes = self.text.as_bytes();
        let mut end = self.pos + 1;
        while bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
        {
            end += 1;
        }
        self.take(Kind::Word, end)
    }

    fn operator(&mut self, first: u8) -> Token {
        let second = self.byte(self.pos + 1);
        let (punct, len) = match (first, second) {
            (b'=', Some(b'=')) => (Punct::DoubleEq, 2),
            (b'=', Some(b'>')) => (Punct::FatArrow, 2),
            (b'=', _) => (Punct::Eq, 1),
            (b'!', Some(b'=')) => (Punct::NotEq, 2),
            (b'<', Some(b'>')) => (Punct::NotEq, 2),
            (b'<', Some(b'=')) if self.byte(self.pos + 2) == Some(b'>') => (Punct::Other, 3),
            (b'<', Some(b'=')) => (Punct::LtEq, 2),
            (b'<', Some(b'<' | b'@' | b'|' | b'-' | b'^')) => (Punct::Other, 2),
            (b'<', _) => (Punct::Lt, 1),
            (b'>', Some(b'=')) => (Punct::GtEq, 2),
            (b'>', Some(b'>' | b'^')) => (Punct::Other, 2),
            (b'>', _) => (Punct::Gt, 1),
            (b'-', Some(b'>')) => (Punct::Other, 2),
            (b'-', _) => (Punct::Minus, 1),
            (b'+', _) => (Punct::Plus, 1),
            (b'*', _) => (Punct::Star, 1),
            (b'/', _) => (Punct::Slash, 1),
            (b'%', _) => (Punct::Percent, 1),
            (b'(', _) => (Punct::LParen, 1),
            (b')', _) => (Punct::RParen, 1),
            (b'[', _) => (Punct::LBracket, 1),
            (b']', _) => (Punct::RBracket, 1),
            (b',', _) => (Punct::Comma, 1),
            (b';', _) => (Punct::Semicolon, 1),
            (b'.', _) => (Punct::Period, 1),
            (b'|' | b':' | b'&', Some(s)) if s == first => (Punct::Other, 2),
            _ => (Punct::Other, 1),
        };
        self.punct(punct, len)
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let first = self.byte(self.pos)?;
        let second = self.byte(self.pos + 1);
        let token = match first {
            b' ' | b'\t' | b'\n' | b'\r' => self.take(Kind::Whitespace, self.whitespace_end()),
            b'-' if second == Some(b'-') => self.take(Kind::Comment, self.line_end()),
            b'#' if matches!(second, Some(b' ' | b'!')) => {
                self.take(Kind::Comment, self.line_end())
            }
            b'/' if second == Some(b'*') => match self.block_comment_end() {
                Some(end) => self.take(Kind::Comment, end),
                None => self.take(Kind::Unterminated, self.text.len()),
            },
            b'\'' | b'"' | b'`' => match self.quoted_end(first, first == b'\'') {
                Some(end) if first == b'\'' => self.take(Kind::String, end),
                Some(end) => self.take(Kind::QuotedIdent, end),
                None => self.take(Kind::Unterminated, self.text.len()),
            },
            b'0'..=b'9' => self.number(),
            b'.' if second.is_some_and(|b| b.is_ascii_digit()) => {
                let end = self.pos + 1;
                self.take(Kind::Unusual, end)
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => self.word(),
            b'(' | b')' | b'[' | b']' | b',' | b';' | b'.' | b'+' | b'-' | b'*' | b'/' | b'%'
            | b'=' | b'!' | b'<' | b'>' | b'|' | b':' | b'&' | b'^' | b'~' | b'?' | b'@' => {
                self.operator(first)
            }
            _ => {
                let len = self.text[self.pos..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
                self.take(Kind::Unusual, self.pos + len)
            }
        };
        Some(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str) -> Vec<(Kind, &str)> {
        Lexer::new(sql)
            .filter(|t| !t.is_trivia())
            .map(|t| (t.kind, t.text(sql)))
            .collect()
    }

    #[test]
    fn splits_statements_into_tokens() {
        let sql = "ALTER TABLE `a``b` EXECUTE p(x => [1, -2.5e3], y = 'it''s \\' ok') -- c\n;";
        assert_eq!(
            kinds(sql),
            vec![
                (Kind::Word, "ALTER"),
                (Kind::Word, "TABLE"),
                (Kind::QuotedIdent, "`a``b`"),
                (Kind::Word, "EXECUTE"),
                (Kind::Word, "p"),
                (Kind::Punct(Punct::LParen), "("),
                (Kind::Word, "x"),
                (Kind::Punct(Punct::FatArrow), "=>"),
                (Kind::Punct(Punct::LBracket), "["),
                (Kind::Number, "1"),
                (Kind::Punct(Punct::Comma), ","),
                (Kind::Punct(Punct::Minus), "-"),
                (Kind::Number, "2.5e3"),
                (Kind::Punct(Punct::RBracket), "]"),
                (Kind::Punct(Punct::Comma), ","),
                (Kind::Word, "y"),
                (Kind::Punct(Punct::Eq), "="),
                (Kind::String, "'it''s \\' ok'"),
                (Kind::Punct(Punct::RParen), ")"),
                (Kind::Punct(Punct::Semicolon), ";"),
            ]
        );
    }

    #[test]
    fn operators_comments_and_odd_tokens() {
        assert_eq!(
            kinds("a<>b != c <= d >= e == f /* x /* y */ z */ # h\n#x 0x1F 1_000 1a é"),
            vec![
                (Kind::Word, "a"),
                (Kind::Punct(Punct::NotEq), "<>"),
                (Kind::Word, "b"),
                (Kind::Punct(Punct::NotEq), "!="),
                (Kind::Word, "c"),
                (Kind::Punct(Punct::LtEq), "<="),
                (Kind::Word, "d"),
                (Kind::Punct(Punct::GtEq), ">="),
                (Kind::Word, "e"),
                (Kind::Punct(Punct::DoubleEq), "=="),
                (Kind::Word, "f"),
                (Kind::Unusual, "#"),
                (Kind::Word, "x"),
                (Kind::Unusual, "0x1F"),
                (Kind::Number, "1_000"),
                (Kind::Unusual, "1a"),
                (Kind::Unusual, "é"),
            ]
        );
        assert_eq!(kinds("'open"), vec![(Kind::Unterminated, "'open")]);
        assert_eq!(kinds("/* open"), vec![(Kind::Unterminated, "/* open")]);
    }

    #[test]
    fn tokens_cover_the_text_without_gaps() {
        let sql = "SELECT a,b FROM system.x WHERE a = 'é' -- ü\n AND b<1;";
        let mut at = 0;
        for token in Lexer::new(sql) {
            assert_eq!(token.start, at);
            assert!(token.end > token.start);
            at = token.end;
        }
        assert_eq!(at, sql.len());
    }
}
