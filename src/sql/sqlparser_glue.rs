//! What the statement parser shares about sqlparser: its tokens as a [`LiteralSource`], the
//! literal a sqlparser expression spells, parsing one expression out of a statement, and turning
//! sqlparser's errors into ClickHouse-style positioned `SYNTAX_ERROR`s.
//!
//! sqlparser nests a chain of binary operators into a tree as deep as the chain, and builds,
//! prints, compares and drops it recursively: nothing reaches its expression parser that holds
//! more than [`super::limits::SQLPARSER_MAX_OPERATORS`] operators (the callers check).

use std::borrow::Cow;

use sqlparser::ast::{Expr, UnaryOperator, Value};
use sqlparser::dialect::ClickHouseDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, Tokenizer};

use super::lexer::Lexer;
use super::literal_parse::{LiteralSource, Tok, ends_literal, read_literal};
use crate::error::{Error, Result};
use crate::literal::Literal;

/// sqlparser's parser as a [`LiteralSource`]; [`SqlparserSource::rewind`] undoes what it read.
pub(crate) struct SqlparserSource<'p, 'd> {
    parser: &'p mut Parser<'d>,
    consumed: usize,
}

impl<'p, 'd> SqlparserSource<'p, 'd> {
    pub(crate) fn new(parser: &'p mut Parser<'d>) -> Self {
        SqlparserSource {
            parser,
            consumed: 0,
        }
    }

    /// Puts the parser back where it was.
    pub(crate) fn rewind(self) {
        for _ in 0..self.consumed {
            self.parser.prev_token();
        }
    }
}

impl LiteralSource for SqlparserSource<'_, '_> {
    fn peek(&mut self) -> Tok<'_> {
        match &self.parser.peek_token_ref().token {
            Token::Number(text, _) => Tok::Number(text),
            Token::SingleQuotedString(text) => Tok::String(Cow::Borrowed(text)),
            Token::Word(word) if word.quote_style.is_none() => Tok::Word(&word.value),
            Token::LParen => Tok::LParen,
            Token::RParen => Tok::RParen,
            Token::LBracket => Tok::LBracket,
            Token::RBracket => Tok::RBracket,
            Token::Comma => Tok::Comma,
            Token::Minus => Tok::Minus,
            Token::EOF => Tok::End,
            _ => Tok::Other,
        }
    }

    fn advance(&mut self) {
        self.parser.next_token();
        self.consumed += 1;
    }
}

/// The literal at the parser's position when one stands there whole (followed by `,`, `)` or the
/// end); otherwise `None` and the parser is where it was.
pub(crate) fn try_literal(parser: &mut Parser) -> Option<Literal> {
    let mut source = SqlparserSource::new(parser);
    match read_literal(&mut source) {
        Some(literal) if ends_literal(&source.peek()) => Some(literal),
        _ => {
            source.rewind();
            None
        }
    }
}

/// The literal an expression spells, if it is one: a number (with an optional leading `-`), a
/// single-quoted string, `true`/`false`, `NULL`, or an array or tuple of literals.
pub(crate) fn literal_of(expr: &Expr) -> Option<Literal> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(text, _) => Some(Literal::Number(text.clone())),
            Value::SingleQuotedString(text) => Some(Literal::String(text.clone())),
            Value::Boolean(b) => Some(Literal::Bool(*b)),
            Value::Null => Some(Literal::Null),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(value) => match &value.value {
                Value::Number(text, _) if !text.starts_with('-') => {
                    Some(Literal::Number(format!("-{text}")))
                }
                _ => None,
            },
            _ => None,
        },
        Expr::Array(array) => array
            .elem
            .iter()
            .map(literal_of)
            .collect::<Option<Vec<_>>>()
            .map(|items| Literal::Array(items.into())),
        Expr::Tuple(items) if items.len() > 1 => items
            .iter()
            .map(literal_of)
            .collect::<Option<Vec<_>>>()
            .map(Literal::Tuple),
        _ => None,
    }
}

/// sqlparser's reading of the expression `sql[start..end]` of a statement, followed by the token
/// at `end` (the `,` or `)` after it, or the end of the statement): errors carry positions in the
/// whole statement, as if sqlparser had read all of it.
pub(crate) fn parse_expr_range(
    sql: &str,
    first_line: usize,
    start: usize,
    end: usize,
) -> Result<Expr> {
    let mut after = Lexer::at(sql, end);
    let stop = after.next_significant().end;
    let text = sql.get(start..stop).unwrap_or_default();
    let base = super::fast::location_at(sql, start);
    let dialect = ClickHouseDialect {};
    let mut tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| syntax_error(sql, first_line, &e.message, shift(e.location, base)))?;
    tokens.retain(|t| !matches!(t.token, Token::Whitespace(_)));
    for token in &mut tokens {
        token.span.start = shift(token.span.start, base);
        token.span.end = shift(token.span.end, base);
    }
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(tokens);
    let expr = parser
        .parse_expr()
        .map_err(|e| parser_error(sql, first_line, &e))?;
    // What follows must be the delimiter (the last token read) or the end.
    let next = parser.next_token();
    let rest_is_delimiter = if stop > end {
        next.token != Token::EOF && parser.peek_token_ref().token == Token::EOF
    } else {
        next.token == Token::EOF
    };
    if !rest_is_delimiter {
        let error = ParserError::ParserError(format!(
            "Expected: ), found: {}{}",
            next.token, next.span.start
        ));
        return Err(parser_error(sql, first_line, &error));
    }
    Ok(expr)
}

/// `location` in a text that starts at `base` of the statement, as a location in the statement.
fn shift(location: Location, base: Location) -> Location {
    match location.line {
        0 => location,
        1 => Location {
            line: base.line,
            column: base.column + location.column - 1,
        },
        line => Location {
            line: base.line + line - 1,
            column: location.column,
        },
    }
}

/// A positioned `SYNTAX_ERROR` from sqlparser's error.
pub(crate) fn parser_error(sql: &str, first_line: usize, error: &ParserError) -> Error {
    let text = match error {
        ParserError::TokenizerError(text) | ParserError::ParserError(text) => text.clone(),
        ParserError::RecursionLimitExceeded => "expression nested too deeply".to_string(),
    };
    let (message, location) = split_location(&text);
    syntax_error(sql, first_line, message, location)
}

/// Splits sqlparser's `"<message> at Line: L, Column: C"` into the message and its location.
fn split_location(text: &str) -> (&str, Location) {
    if let Some(at) = text.rfind(" at Line: ") {
        let tail = &text[at + " at Line: ".len()..];
        if let Some((line, column)) = tail.split_once(", Column: ")
            && let (Ok(line), Ok(column)) = (line.parse(), column.parse())
        {
            return (&text[..at], Location { line, column });
        }
    }
    (text, Location { line: 0, column: 0 })
}

/// `Syntax error: failed at position P (line L, col C): message`, ClickHouse-style. `P` is the
/// 1-based character offset in the statement; a location of line 0 means the end of the text.
pub(crate) fn syntax_error(
    sql: &str,
    first_line: usize,
    message: &str,
    location: Location,
) -> Error {
    let (position, line, column) = if location.line == 0 {
        let line = sql.matches('\n').count() as u64 + 1;
        let column = sql.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
        (sql.chars().count() + 1, line, column)
    } else {
        (
            char_offset(sql, location) + 1,
            location.line,
            location.column,
        )
    };
    let line = line as usize + first_line - 1;
    Error::syntax(format!(
        "Syntax error: failed at position {position} (line {line}, col {column}): {message}"
    ))
}

fn char_offset(sql: &str, location: Location) -> usize {
    let lines_before = (location.line as usize).saturating_sub(1);
    let before: usize = sql
        .split_inclusive('\n')
        .take(lines_before)
        .map(|l| l.chars().count())
        .sum();
    before + (location.column as usize).saturating_sub(1)
}

/// Byte offsets of many sqlparser locations in one text, each found in time proportional to its
/// line's length at most (constant on ASCII lines): the start and ASCII-ness of every line are
/// computed once.
pub(crate) struct ByteOffsets<'a> {
    sql: &'a str,
    /// `(start, is_ascii)` of each line.
    lines: Vec<(usize, bool)>,
}

impl<'a> ByteOffsets<'a> {
    pub(crate) fn new(sql: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for line in sql.split_inclusive('\n') {
            lines.push((start, line.is_ascii()));
            start += line.len();
        }
        ByteOffsets { sql, lines }
    }

    /// The byte offset of `location` (as [`byte_offset`]).
    pub(crate) fn of(&self, location: Location) -> usize {
        let Some(&(start, ascii)) = (location.line as usize)
            .checked_sub(1)
            .and_then(|i| self.lines.get(i))
        else {
            return self.sql.len();
        };
        let column = (location.column as usize).saturating_sub(1);
        let line = self.sql.get(start..).unwrap_or_default();
        let line = line.split_inclusive('\n').next().unwrap_or_default();
        if ascii {
            return start + column.min(line.len());
        }
        start
            + line
                .char_indices()
                .nth(column)
                .map_or(line.len(), |(i, _)| i)
    }
}

/// The byte offset of sqlparser's `location` (1-based line, character column) in `sql`; the end
/// of the text for an empty location.
pub(crate) fn byte_offset(sql: &str, location: Location) -> usize {
    if location.line == 0 {
        return sql.len();
    }
    let lines_before = (location.line as usize).saturating_sub(1);
    let line_start: usize = sql
        .split_inclusive('\n')
        .take(lines_before)
        .map(str::len)
        .sum();
    let line = sql.get(line_start..).unwrap_or_default();
    let column = (location.column as usize).saturating_sub(1);
    line_start
        + line
            .char_indices()
            .nth(column)
            .map_or(line.len(), |(i, _)| i)
}
