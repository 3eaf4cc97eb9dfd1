//! The parser's limits, ClickHouse's settings of the same names: `max_query_size` (bytes of a
//! statement's text) and `max_parser_depth` (how deeply brackets and `NOT` may nest). Both are
//! checked before any parsing, in one pass of icetrim's lexer (`sql::lexer`) over the text, with
//! ClickHouse's texts and codes:
//!
//! - longer than `max_query_size`: `SYNTAX_ERROR` (62), "Max query size exceeded (can be
//!   increased with the `max_query_size` setting): Syntax error: failed at position P (token):
//!   token. ", naming the token that crosses the limit (byte position, as ClickHouse counts);
//!   0 means no limit;
//! - brackets nested deeper than `max_parser_depth`: `TOO_DEEP_RECURSION` (306), "Maximum parse
//!   depth (N) exceeded. Consider rising max_parser_depth parameter." A `where` predicate given as
//!   a string counts its own brackets and `NOT`s the same way.
//!
//! Within them every statement parses without recursing once per operand. Deliberate difference:
//! ClickHouse counts its parser's own frames (each bracket costs several, so it refuses about 200
//! nested parentheses under the default); icetrim counts the nesting itself, so the setting is the
//! number of levels. It accepts 1 to [`MAX_PARSER_DEPTH_CEILING`] (ClickHouse's 0, "no limit",
//! is refused): the trees a deeper statement builds are walked recursively, one frame per level,
//! and the ceiling is what a thread with a 2 MiB stack is tested to walk.
//!
//! [`SQLPARSER_MAX_OPERATORS`] guards the places that still hand text to sqlparser, whose trees
//! nest once per binary operator of a chain and are dropped, compared and printed recursively.

use super::lexer::{Kind, Lexer, Punct, Token};
use crate::error::{Error, ErrorKind, Result};

/// ClickHouse's default `max_query_size`.
pub const DEFAULT_MAX_QUERY_SIZE: u64 = 262_144;
/// ClickHouse's default `max_parser_depth`.
pub const DEFAULT_MAX_PARSER_DEPTH: u64 = 1000;
/// The largest `max_parser_depth` icetrim accepts.
pub const MAX_PARSER_DEPTH_CEILING: u64 = 2_000;

/// The most binary operators (and operator keywords) a text handed to sqlparser's expression
/// parser may hold; longer chains are read by icetrim's own parsers or refused.
pub(crate) const SQLPARSER_MAX_OPERATORS: usize = 500;

/// How long and how deep a statement may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Bytes of one statement's text; 0: no limit.
    pub max_query_size: u64,
    /// Nesting of brackets and `NOT`.
    pub max_parser_depth: u64,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_query_size: DEFAULT_MAX_QUERY_SIZE,
            max_parser_depth: DEFAULT_MAX_PARSER_DEPTH,
        }
    }
}

impl ParseLimits {
    /// Fails on a statement text over either limit (see the module comment); `first_line` is
    /// the script line the text starts on.
    pub fn check(&self, sql: &str, first_line: usize) -> Result<()> {
        self.check_size(sql, first_line)?;
        self.check_depth(Lexer::new(sql).filter(|t| !t.is_trivia()))
    }

    fn check_size(&self, sql: &str, first_line: usize) -> Result<()> {
        let limit = usize::try_from(self.max_query_size).unwrap_or(usize::MAX);
        if limit == 0 || sql.len() <= limit {
            return Ok(());
        }
        let Some(token) = Lexer::new(sql).find(|t| t.end > limit) else {
            return Ok(());
        };
        Err(Error::syntax(format!(
            "Max query size exceeded (can be increased with the `max_query_size` setting): {}",
            clickhouse_syntax_error(sql, first_line, token)
        )))
    }

    /// Fails when the brackets of `tokens` nest deeper than the limit.
    pub(crate) fn check_depth(&self, tokens: impl Iterator<Item = Token>) -> Result<()> {
        let mut depth = 0u64;
        for token in tokens {
            match token.kind {
                Kind::Punct(Punct::LParen | Punct::LBracket) => {
                    depth += 1;
                    if depth > self.max_parser_depth {
                        return Err(self.too_deep());
                    }
                }
                Kind::Punct(Punct::RParen | Punct::RBracket) => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }

    /// ClickHouse's `TOO_DEEP_RECURSION` for this limit.
    pub fn too_deep(&self) -> Error {
        Error::new(
            ErrorKind::TooDeepRecursion,
            format!(
                "Maximum parse depth ({}) exceeded. Consider rising max_parser_depth parameter",
                self.max_parser_depth
            ),
        )
    }
}

/// ClickHouse's syntax error text for `token` (no hilite): "Syntax error: failed at position P
/// (preview)[ (line L, col C)]: preview. " with previews of 160 characters ("..." when cut).
fn clickhouse_syntax_error(sql: &str, first_line: usize, token: Token) -> String {
    const SHOW_CHARS: usize = 160;
    let text = token.text(sql);
    let cut = text.char_indices().nth(SHOW_CHARS).map(|(i, _)| i);
    let preview = &text[..cut.unwrap_or(text.len())];
    let (dots, tail) = if cut.is_some() {
        ("...", "... ")
    } else {
        ("", ". ")
    };
    let before = &sql[..token.start];
    let multiline = sql[..token.end.saturating_sub(1)].contains('\n');
    let place = if multiline {
        let line = first_line + before.matches('\n').count();
        let column = before
            .rfind('\n')
            .map_or(before.len(), |nl| before.len() - nl - 1)
            + 1;
        format!(" (line {line}, col {column})")
    } else {
        String::new()
    };
    format!(
        "Syntax error: failed at position {} ({preview}{dots}){place}: {preview}{tail}",
        token.start + 1
    )
}

/// The binary operators and operator keywords in `tokens`: an upper bound of the longest chain
/// sqlparser would nest from them.
pub(crate) fn operator_count(sql: &str, tokens: impl Iterator<Item = Token>) -> usize {
    const OPERATOR_WORDS: &[&str] = &[
        "AND", "OR", "NOT", "IS", "IN", "LIKE", "ILIKE", "BETWEEN", "DIV", "MOD", "XOR", "REGEXP",
        "RLIKE", "COLLATE", "AT", "SIMILAR", "OVERLAPS", "GLOBAL", "MEMBER", "OPERATOR",
    ];
    tokens
        .filter(|t| match t.kind {
            Kind::Punct(p) => p.is_binary_operator(),
            Kind::Word => {
                let text = t.text(sql);
                OPERATOR_WORDS.iter().any(|w| w.eq_ignore_ascii_case(text))
            }
            Kind::Unusual => true,
            _ => false,
        })
        .count()
}

/// Whether sqlparser may parse the expressions of `sql` (see [`SQLPARSER_MAX_OPERATORS`]).
pub(crate) fn sqlparser_can_parse(sql: &str) -> bool {
    operator_count(sql, Lexer::new(sql).filter(|t| !t.is_trivia())) <= SQLPARSER_MAX_OPERATORS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(size: u64, depth: u64) -> ParseLimits {
        ParseLimits {
            max_query_size: size,
            max_parser_depth: depth,
        }
    }

    #[test]
    fn the_token_crossing_the_size_limit_is_named_as_clickhouse_names_it() {
        // Observed in ClickHouse 26.9 (chdb) for these texts and limits.
        let e = limits(12, 1000)
            .check("SELECT 1, 22222 SETTINGS x = 1", 1)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::SyntaxError);
        assert_eq!(
            e.to_string(),
            "Code: 62. DB::Exception: Max query size exceeded (can be increased with the \
             `max_query_size` setting): Syntax error: failed at position 11 (22222): 22222. . \
             (SYNTAX_ERROR)"
        );
        let e = limits(15, 1000)
            .check("SELECT 1, 22222 SETTINGS x = 1", 1)
            .unwrap_err();
        assert!(e.message().ends_with("position 16 ( ):  . "), "{e}");
        let long = format!("SELECT 1 {}", "y".repeat(300));
        let e = limits(100, 1000).check(&long, 1).unwrap_err();
        let y160 = "y".repeat(160);
        assert!(
            e.message()
                .ends_with(&format!("position 10 ({y160}...): {y160}... ")),
            "{e}"
        );
        let e = limits(12, 1000).check("SELECT 1,\n 12345", 3).unwrap_err();
        assert!(
            e.message()
                .ends_with("position 12 (12345) (line 4, col 2): 12345. "),
            "{e}"
        );
        assert!(limits(12, 1000).check("SELECT 1, 22", 1).is_ok());
        assert!(limits(0, 1000).check(&long, 1).is_ok(), "0: no limit");
    }

    #[test]
    fn brackets_deeper_than_the_limit_are_too_deep_recursion() {
        let nested = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        assert!(limits(0, 3).check(&nested(3), 1).is_ok());
        let e = limits(0, 3).check(&nested(4), 1).unwrap_err();
        assert_eq!(e.code(), 306);
        assert_eq!(
            e.to_string(),
            "Code: 306. DB::Exception: Maximum parse depth (3) exceeded. Consider rising \
             max_parser_depth parameter. (TOO_DEEP_RECURSION)"
        );
        assert!(limits(0, 3).check("[[[1]]], [[[2]]], ')))((('", 1).is_ok());
        assert!(limits(0, 3).check("[([(1)])]", 1).is_err());
    }

    #[test]
    fn operators_are_counted_for_sqlparser() {
        assert!(sqlparser_can_parse(
            "SELECT a FROM t WHERE a = 1 AND b IN (1, 2)"
        ));
        let chain = vec!["a = 1"; SQLPARSER_MAX_OPERATORS].join(" AND ");
        assert!(!sqlparser_can_parse(&chain));
        let list = format!("[{}]", vec!["1"; 10_000].join(", "));
        assert!(sqlparser_can_parse(&list), "lists are no chains");
    }
}
