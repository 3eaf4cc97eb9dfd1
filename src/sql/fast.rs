//! The one-pass parsers of the statements whose text may be long and flat: `[EXPLAIN] ALTER TABLE
//! t EXECUTE p(args) [FORMAT f]` (an argument may be a list of a million ids). It reads
//! icetrim's [`Lexer`] tokens, build no sqlparser tree and recurse on nothing, so memory follows
//! the values (a canonical `Int64` list element costs 8 bytes) and any length parses on a small
//! stack.
//!
//! Each answers `None` while the statement is not (yet) of its exact form; the statement then
//! goes to the sqlparser path of [`super::parser`] as before, which reports the error or parses
//! what these do not read. Once `EXECUTE p(` is read, the `EXECUTE` parser owns the statement and
//! reports its errors itself, with sqlparser's wording and positions. An argument that is not a
//! literal is handed to sqlparser alone (it prints and checks it as before) when its operators
//! are few enough for sqlparser's recursive tree ([`super::limits::SQLPARSER_MAX_OPERATORS`]);
//! a longer one is kept as its tokens' canonical text ([`super::render`]), which the binder
//! refuses as not a literal.

use sqlparser::tokenizer::Location;

use super::ast::{AlterExecute, Arg, ArgValue, Statement, TableName};
use super::lexer::{Kind, Lexer, Punct, Token};
use super::limits::sqlparser_can_parse;
use super::literal_parse::{LexSource, LiteralSource, ends_literal, read_literal, string_value};
use super::render::render_tokens;
use super::sqlparser_glue::{literal_of, parse_expr_range, syntax_error};
use crate::error::{Error, ErrorKind, Result};

/// The statement, when it is one of the forms read here (see the module comment).
pub(crate) fn parse(sql: &str, first_line: usize) -> Option<Result<Statement>> {
    parse_execute(sql, first_line)
}

/// The value of an identifier token: a bare word as written, a quoted one without its quotes
/// (a doubled quote is one), or a single-quoted string (sqlparser takes those as names too).
pub(crate) fn ident_value(sql: &str, token: Token) -> Option<String> {
    let text = token.text(sql);
    match token.kind {
        Kind::Word => Some(text.to_string()),
        Kind::QuotedIdent => {
            let quote = text.chars().next()?;
            let inner = text.get(1..text.len() - 1)?;
            Some(inner.replace(&format!("{quote}{quote}"), &quote.to_string()))
        }
        Kind::String => string_value(text).map(|v| v.into_owned()),
        _ => None,
    }
}

/// Whether `token` is the end of the text (the empty token after the last one).
pub(crate) fn is_end(token: Token) -> bool {
    token.start == token.end && token.kind == Kind::Whitespace
}

/// sqlparser's location (1-based line and character column) of byte `at` of `sql`.
pub(crate) fn location_at(sql: &str, at: usize) -> Location {
    let before = sql.get(..at).unwrap_or(sql);
    let line = before.matches('\n').count() as u64 + 1;
    let line_start = before.rfind('\n').map_or(0, |nl| nl + 1);
    let column = before[line_start..].chars().count() as u64 + 1;
    Location { line, column }
}

/// sqlparser's "Expected: …, found: …" at `token`, as a positioned `SYNTAX_ERROR`.
pub(crate) fn expected(sql: &str, first_line: usize, what: &str, token: Token) -> Error {
    if is_end(token) {
        let message = format!("Expected: {what}, found: EOF");
        return syntax_error(sql, first_line, &message, Location { line: 0, column: 0 });
    }
    let message = format!("Expected: {what}, found: {}", token.text(sql));
    syntax_error(sql, first_line, &message, location_at(sql, token.start))
}

/// `[db.]name` from the cursor; `None` when the next tokens are no table name.
fn table_name(sql: &str, cursor: &mut LexSource<'_>) -> Option<TableName> {
    let first = ident_value(sql, cursor.next_token())?;
    if cursor.peek_token().kind != Kind::Punct(Punct::Period) {
        return Some(TableName {
            database: None,
            table: first,
        });
    }
    cursor.next_token();
    let table = ident_value(sql, cursor.next_token())?;
    Some(TableName {
        database: Some(first),
        table,
    })
}

/// `[EXPLAIN] ALTER TABLE t EXECUTE p(`, then the arguments and the end of the statement.
fn parse_execute(sql: &str, first_line: usize) -> Option<Result<Statement>> {
    let mut cursor = LexSource::at(sql, 0);
    let explain = cursor.peek_token().is_word(sql, "EXPLAIN");
    if explain {
        cursor.next_token();
    }
    if !cursor.next_token().is_word(sql, "ALTER") || !cursor.next_token().is_word(sql, "TABLE") {
        return None;
    }
    let table = table_name(sql, &mut cursor)?;
    if !cursor.next_token().is_word(sql, "EXECUTE") {
        return None;
    }
    let procedure = ident_value(sql, cursor.next_token())?;
    if cursor.next_token().kind != Kind::Punct(Punct::LParen) {
        return None;
    }
    Some(execute_rest(
        sql, first_line, cursor, explain, table, procedure,
    ))
}

fn execute_rest(
    sql: &str,
    first_line: usize,
    mut cursor: LexSource<'_>,
    explain: bool,
    table: TableName,
    procedure: String,
) -> Result<Statement> {
    let args = arguments(sql, first_line, &mut cursor)?;
    let format = statement_end(sql, first_line, &mut cursor)?;
    let alter = AlterExecute {
        table,
        procedure,
        args,
        format,
    };
    let statement = Statement::AlterExecute(alter);
    Ok(if explain {
        Statement::Explain(Box::new(statement))
    } else {
        statement
    })
}

/// The arguments up to and including the closing `)`.
fn arguments(sql: &str, first_line: usize, cursor: &mut LexSource<'_>) -> Result<Vec<Arg>> {
    let mut args = Vec::new();
    if cursor.peek_token().kind == Kind::Punct(Punct::RParen) {
        cursor.next_token();
        return Ok(args);
    }
    loop {
        args.push(argument(sql, first_line, cursor)?);
        let next = cursor.next_token();
        match next.kind {
            Kind::Punct(Punct::Comma) => continue,
            Kind::Punct(Punct::RParen) => return Ok(args),
            _ => return Err(expected(sql, first_line, ")", next)),
        }
    }
}

/// `name = value`, `name => value` or a positional `value`.
fn argument(sql: &str, first_line: usize, cursor: &mut LexSource<'_>) -> Result<Arg> {
    let mut ahead = cursor.clone();
    let first = ahead.next_token();
    let second = ahead.next_token();
    let named = matches!(first.kind, Kind::Word | Kind::QuotedIdent)
        && matches!(second.kind, Kind::Punct(Punct::Eq | Punct::FatArrow));
    let name = if named {
        *cursor = ahead;
        ident_value(sql, first)
    } else {
        None
    };
    let start = cursor.peek_token().start;
    let mut attempt = cursor.clone();
    if let Some(literal) = read_literal(&mut attempt)
        && ends_literal(&attempt.peek())
    {
        *cursor = attempt;
        return Ok(Arg {
            name,
            value: ArgValue::Literal(literal),
        });
    }
    let end = expression_end(sql, first_line, cursor)?;
    let value = expression_value(sql, first_line, start, end)?;
    Ok(Arg { name, value })
}

/// Skips an expression: the tokens up to the `,` or `)` that closes the argument at bracket depth
/// 0; the byte offset where it ends.
fn expression_end(sql: &str, first_line: usize, cursor: &mut LexSource<'_>) -> Result<usize> {
    let first = cursor.peek_token();
    let mut depth = 0usize;
    let mut end = first.start;
    loop {
        let token = cursor.peek_token();
        match token.kind {
            Kind::Punct(Punct::Comma | Punct::RParen) if depth == 0 => break,
            Kind::Punct(Punct::LParen | Punct::LBracket) => depth += 1,
            Kind::Punct(Punct::RParen | Punct::RBracket) => depth = depth.saturating_sub(1),
            _ if is_end(token) => break,
            _ => {}
        }
        cursor.next_token();
        end = token.end;
    }
    if end == first.start {
        return Err(expected(sql, first_line, "an expression", first));
    }
    Ok(end)
}

/// An argument that is no literal: sqlparser's reading of `sql[start..end]` when it may parse
/// it, else the tokens' canonical text.
fn expression_value(sql: &str, first_line: usize, start: usize, end: usize) -> Result<ArgValue> {
    let text = sql.get(start..end).unwrap_or_default();
    if !sqlparser_can_parse(text) {
        let tokens = Lexer::at(sql, start).take_while(|t| t.end <= end);
        return Ok(ArgValue::Expr(render_tokens(sql, tokens)));
    }
    let expr = parse_expr_range(sql, first_line, start, end)?;
    Ok(match literal_of(&expr) {
        Some(literal) => ArgValue::Literal(literal),
        None => ArgValue::Expr(expr.to_string()),
    })
}

/// After the arguments: `, EXECUTE …` (refused), `FORMAT name`, `;`, the end.
fn statement_end(
    sql: &str,
    first_line: usize,
    cursor: &mut LexSource<'_>,
) -> Result<Option<String>> {
    let mut ahead = cursor.clone();
    let next = ahead.next_token();
    if next.kind == Kind::Punct(Punct::Comma) && ahead.next_token().is_word(sql, "EXECUTE") {
        return Err(Error::new(
            ErrorKind::QueryIsProhibited,
            "Execute commands should not be combined",
        ));
    }
    let mut format = None;
    if next.is_word(sql, "FORMAT") {
        let mut after = ahead.clone();
        let name = after.next_token();
        if let (Kind::Word | Kind::QuotedIdent, true) = (name.kind, at_end(&mut after)) {
            format = ident_value(sql, name);
            *cursor = after;
        }
    }
    if format.is_none() && !at_end(cursor) {
        return Err(expected(
            sql,
            first_line,
            "end of statement",
            cursor.peek_token(),
        ));
    }
    Ok(format)
}

/// Whether only an optional `;` is left; consumes it.
fn at_end(cursor: &mut LexSource<'_>) -> bool {
    let mut ahead = cursor.clone();
    let mut next = ahead.next_token();
    if next.kind == Kind::Punct(Punct::Semicolon) {
        next = ahead.next_token();
    }
    if is_end(next) {
        *cursor = ahead;
        return true;
    }
    false
}
