//! The statement parser: sqlparser's tokenizer and expression parser, icetrim's own grammar on top.
//!
//! sqlparser 0.64 parses none of the `ALTER TABLE … EXECUTE` forms and reads `SET a = 1, b = 2`
//! wrongly in its ClickHouse dialect, so this module peeks the leading keywords itself and hands
//! sqlparser only expressions (procedure arguments) and column definitions; a `SELECT` is kept as
//! text for the query engine (it only finds where the query ends). A statement it does not model goes to sqlparser whole: if sqlparser accepts it, it is
//! refused with `NOT_IMPLEMENTED` ("Statement … is not supported by icetrim"), else it is a
//! `SYNTAX_ERROR`. Syntax errors carry the character position, line and column, ClickHouse-style.
//! The accepted language is written down in `grammar/icetrim.md`.
//!
//! Before any of it, the text is checked against the limits ([`super::limits`]), and the
//! statements whose text may be long and flat (`ALTER TABLE … EXECUTE`) are read in one pass by `sql::fast`. Literals are read without sqlparser's tree
//! (`sql::literal_parse`); sqlparser's expression parser only sees text with few operators
//! (`limits::SQLPARSER_MAX_OPERATORS`): a longer statement it would have to read is refused as
//! not supported (or, where a literal belongs, as not a literal).

use sqlparser::dialect::{ClickHouseDialect, GenericDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use super::alter_refs;
use super::ast::{
    AlterExecute, AlterTable, Arg, ArgValue, CreateDatabase, CreateTable, DescribeTarget, Engine,
    EngineArg, EngineName, Literal, OptimizeManifest, OptimizeTable, Statement, TableName,
};
use super::lexer::Lexer;
use super::limits::{ParseLimits, SQLPARSER_MAX_OPERATORS, sqlparser_can_parse};
use super::select::Select;
pub(crate) use super::sqlparser_glue::literal_of;
use super::sqlparser_glue::{byte_offset, parser_error, syntax_error, try_literal};
use crate::error::{Error, ErrorKind, Result};

#[path = "parser_ddl.rs"]
mod ddl;
use ddl::{parse_create, parse_drop, parse_set, parse_show, parse_use};
#[path = "parser_access.rs"]
mod access;
use access::{parse_grant, parse_revoke, parse_show_access, parse_user_names, second_word_is};
#[path = "parser_maintain.rs"]
mod maintain;

/// Parses one statement (an optional trailing `;` is allowed) under ClickHouse's default limits.
/// Lines in errors count from 1.
pub fn parse_statement(sql: &str) -> Result<Statement> {
    parse_statement_at(sql, 1)
}

/// Parses one statement that starts on line `first_line` of a script, so that syntax errors name
/// the script's line; ClickHouse's default limits.
pub fn parse_statement_at(sql: &str, first_line: usize) -> Result<Statement> {
    parse_statement_with(sql, first_line, &ParseLimits::default())
}

/// [`parse_statement_at`] under `limits` (a session's `max_query_size` and `max_parser_depth`).
pub fn parse_statement_with(
    sql: &str,
    first_line: usize,
    limits: &ParseLimits,
) -> Result<Statement> {
    limits.check(sql, first_line)?;
    parse_checked(sql, first_line)
}

/// Parses a statement whose text was checked against the limits already (a session checks the
/// text as written, then parses it with its `{name:Type}` parameters substituted, which adds no
/// brackets).
pub(crate) fn parse_checked(sql: &str, first_line: usize) -> Result<Statement> {
    if let Some(parsed) = super::fast::parse(sql, first_line) {
        return parsed;
    }
    let dialect = ClickHouseDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| syntax_error(sql, first_line, &e.message, e.location))?;
    let mut tokens: Vec<TokenWithSpan> = tokens
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    if matches!(tokens.last(), Some(t) if t.token == Token::SemiColon) {
        tokens.pop();
    }
    if tokens.is_empty() {
        return Err(Error::syntax("Empty query"));
    }
    let format = split_format(&mut tokens);
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(tokens);
    match parse_known(&mut parser, sql, format.as_ref()) {
        Ok(Some(statement)) => Ok(statement),
        Ok(None) => Err(refuse_unknown(sql, first_line)),
        Err(Fail::Done(error)) => Err(error),
        Err(Fail::Parse(error)) => Err(parser_error(sql, first_line, &error)),
    }
}

/// Why a statement failed: a sqlparser error (becomes `SYNTAX_ERROR` with a position) or a finished
/// icetrim error of another kind.
enum Fail {
    Parse(ParserError),
    Done(Error),
}

impl From<ParserError> for Fail {
    fn from(e: ParserError) -> Self {
        Fail::Parse(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Done(e)
    }
}

type PResult<T> = std::result::Result<T, Fail>;

/// A trailing `FORMAT <name>` taken off the token list, with the `FORMAT` token (for errors).
struct FormatClause {
    name: String,
    token: TokenWithSpan,
}

fn split_format(tokens: &mut Vec<TokenWithSpan>) -> Option<FormatClause> {
    let [.., keyword, name] = tokens.as_slice() else {
        return None;
    };
    let is_format = matches!(&keyword.token, Token::Word(w) if w.keyword == Keyword::FORMAT && w.quote_style.is_none());
    let Token::Word(name) = &name.token else {
        return None;
    };
    if !is_format {
        return None;
    }
    let clause = FormatClause {
        name: name.value.clone(),
        token: keyword.clone(),
    };
    tokens.truncate(tokens.len() - 2);
    Some(clause)
}

/// Parses the statements icetrim models; `None` when the statement is of another kind.
fn parse_known(
    p: &mut Parser,
    sql: &str,
    format: Option<&FormatClause>,
) -> PResult<Option<Statement>> {
    let format_name = format.map(|f| f.name.clone());
    let statement = match p.peek_token().token {
        Token::Word(w) if w.quote_style.is_none() => match w.keyword {
            Keyword::EXPLAIN => parse_explain(p, sql, format_name)?,
            Keyword::ALTER => parse_alter(p, sql, format_name)?.map(|altered| match altered {
                Altered::Execute(alter) => Statement::AlterExecute(alter),
                Altered::Table(alter) => Statement::AlterTable(alter),
            }),
            Keyword::CREATE if second_word_is(p, "USER") => Some(parse_user_names(p, true)?),
            Keyword::DROP if second_word_is(p, "USER") => Some(parse_user_names(p, false)?),
            Keyword::CREATE => parse_create(p, sql)?,
            Keyword::DROP => parse_drop(p)?,
            Keyword::GRANT => Some(parse_grant(p)?),
            Keyword::REVOKE => Some(parse_revoke(p)?),
            Keyword::SHOW => match parse_show_access(p, format_name.clone())? {
                Some(statement) => Some(statement),
                None => parse_show(p, format_name)?,
            },
            Keyword::USE => parse_use(p)?,
            Keyword::SET => Some(parse_set(p, sql)?),
            Keyword::SELECT | Keyword::WITH => Some(parse_select(p, sql, format_name)),
            Keyword::DESCRIBE | Keyword::DESC => Some(parse_describe(p, sql, format_name)?),
            Keyword::OPTIMIZE => parse_optimize(p, false, format_name)?,
            _ if maintain::starts(p, 0) => Some(maintain::parse(p, sql, format_name)?),
            _ => None,
        },
        _ => None,
    };
    let Some(statement) = statement else {
        return Ok(None);
    };
    expect_end(p)?;
    if let Some(clause) = format
        && statement.format().is_none()
    {
        return Err(positioned(
            "FORMAT is allowed only after a statement that returns rows",
            &clause.token,
        ));
    }
    Ok(Some(statement))
}

fn expect_end(p: &mut Parser) -> PResult<()> {
    let next = p.peek_token();
    if next.token == Token::EOF {
        Ok(())
    } else {
        Ok(p.expected("end of statement", next)?)
    }
}

fn positioned(message: &str, at: &TokenWithSpan) -> Fail {
    Fail::Parse(ParserError::ParserError(format!(
        "{message}{}",
        at.span.start
    )))
}

fn parse_explain(p: &mut Parser, sql: &str, format: Option<String>) -> PResult<Option<Statement>> {
    let [_, next] = p.peek_tokens::<2>();
    if matches!(&next, Token::Word(w) if matches!(w.keyword, Keyword::SELECT | Keyword::WITH)) {
        p.next_token();
        return Ok(Some(Statement::Explain(Box::new(parse_select(
            p, sql, format,
        )))));
    }
    if matches!(&next, Token::Word(w) if w.keyword == Keyword::OPTIMIZE) {
        p.next_token();
        return parse_optimize(p, true, format);
    }
    if maintain::starts(p, 1) {
        p.next_token();
        let statement = maintain::parse(p, sql, format)?;
        return Ok(Some(Statement::Explain(Box::new(statement))));
    }
    if !matches!(next, Token::Word(w) if w.keyword == Keyword::ALTER) {
        return Ok(None);
    }
    p.next_token();
    Ok(parse_alter(p, sql, format)?.map(|altered| {
        Statement::Explain(Box::new(match altered {
            Altered::Execute(alter) => Statement::AlterExecute(alter),
            Altered::Table(alter) => Statement::AlterTable(alter),
        }))
    }))
}

/// The `ALTER TABLE` forms icetrim models.
enum Altered {
    Execute(AlterExecute),
    Table(AlterTable),
}

/// `ALTER TABLE name EXECUTE proc(args)`, or a ref or property statement
/// ([`super::alter_refs`]); `None` for any other `ALTER`. `format` is kept on the ref and property
/// statements for `EXPLAIN` only (they return no rows themselves).
fn parse_alter(p: &mut Parser, sql: &str, format: Option<String>) -> PResult<Option<Altered>> {
    p.expect_keyword(Keyword::ALTER)?;
    if !p.parse_keyword(Keyword::TABLE) {
        return Ok(None);
    }
    let table = parse_table_name(p)?;
    if alter_refs::starts_action(p) {
        let action = alter_refs::parse_action(p)?;
        return Ok(Some(Altered::Table(AlterTable {
            table,
            action,
            format,
        })));
    }
    if !p.parse_keyword(Keyword::EXECUTE) {
        return Ok(None);
    }
    let procedure = p.parse_identifier()?.value;
    let args = parse_args(p, sql)?;
    if p.peek_token().token == Token::Comma
        && matches!(p.peek_nth_token(1).token, Token::Word(w) if w.keyword == Keyword::EXECUTE)
    {
        return Err(Error::new(
            ErrorKind::QueryIsProhibited,
            "Execute commands should not be combined",
        )
        .into());
    }
    Ok(Some(Altered::Execute(AlterExecute {
        table,
        procedure,
        args,
        format,
    })))
}

/// `[EXPLAIN] OPTIMIZE TABLE name [MANIFEST]`: compaction, or (with `MANIFEST`, ClickHouse 26.9) the
/// manifest rewrite; `None` for any other `OPTIMIZE` (`PARTITION`, `FINAL`, `DEDUPLICATE`: the
/// MergeTree clauses icetrim does not model, refused as not supported). `OPTIMIZE … MANIFEST` keeps
/// a format only after `EXPLAIN` (the statement itself returns no rows, as in ClickHouse).
fn parse_optimize(
    p: &mut Parser,
    explain: bool,
    format: Option<String>,
) -> PResult<Option<Statement>> {
    p.expect_keyword(Keyword::OPTIMIZE)?;
    if !p.parse_keyword(Keyword::TABLE) {
        return Ok(None);
    }
    let table = parse_table_name(p)?;
    let statement = if p.parse_keyword(Keyword::MANIFEST) {
        Statement::OptimizeManifest(OptimizeManifest {
            table,
            format: format.filter(|_| explain),
        })
    } else if p.peek_token().token != Token::EOF {
        return Ok(None);
    } else {
        Statement::Optimize(OptimizeTable { table, format })
    };
    Ok(Some(if explain {
        Statement::Explain(Box::new(statement))
    } else {
        statement
    }))
}

fn parse_table_name(p: &mut Parser) -> PResult<TableName> {
    let first = p.parse_identifier()?.value;
    if p.consume_token(&Token::Period) {
        let table = p.parse_identifier()?.value;
        Ok(TableName {
            database: Some(first),
            table,
        })
    } else {
        Ok(TableName {
            database: None,
            table: first,
        })
    }
}

/// `( [arg {, arg}] )`.
fn parse_args(p: &mut Parser, sql: &str) -> PResult<Vec<Arg>> {
    p.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    if p.consume_token(&Token::RParen) {
        return Ok(args);
    }
    loop {
        args.push(parse_arg(p, sql)?);
        if !p.consume_token(&Token::Comma) {
            p.expect_token(&Token::RParen)?;
            return Ok(args);
        }
    }
}

/// `key = expr`, `key => expr` or a positional `expr`.
fn parse_arg(p: &mut Parser, sql: &str) -> PResult<Arg> {
    let [first, second] = p.peek_tokens::<2>();
    let name = match (first, second) {
        (Token::Word(word), Token::Eq | Token::RArrow) => {
            p.next_token();
            p.next_token();
            Some(word.value)
        }
        _ => None,
    };
    if let Some(literal) = try_literal(p) {
        return Ok(Arg {
            name,
            value: ArgValue::Literal(literal),
        });
    }
    if !sqlparser_may_read_rest(p, sql) {
        return Err(Fail::Done(Error::not_implemented(format!(
            "An argument expression with more than {SQLPARSER_MAX_OPERATORS} operators is not \
             supported by icetrim"
        ))));
    }
    let expr = p.parse_expr()?;
    let value = match literal_of(&expr) {
        Some(literal) => ArgValue::Literal(literal),
        None => ArgValue::Expr(expr.to_string()),
    };
    Ok(Arg { name, value })
}

/// Whether sqlparser's expression parser may read the rest of the statement: it holds no more
/// operators than sqlparser's recursive tree may take.
fn sqlparser_may_read_rest(p: &Parser, sql: &str) -> bool {
    let next = p.peek_token_ref();
    let rest = sql
        .get(byte_offset(sql, next.span.start)..)
        .unwrap_or_default();
    sqlparser_can_parse(rest)
}

fn parse_literal(p: &mut Parser, sql: &str, what: &str) -> PResult<Literal> {
    if let Some(literal) = try_literal(p) {
        return Ok(literal);
    }
    let start = p.peek_token();
    let not_literal = |found: &dyn std::fmt::Display| {
        positioned(
            &format!("Expected: a literal {what}, found: {found}"),
            &start,
        )
    };
    if !sqlparser_may_read_rest(p, sql) {
        return Err(not_literal(&start.token));
    }
    let expr = p.parse_expr()?;
    match literal_of(&expr) {
        Some(literal) => Ok(literal),
        None => Err(not_literal(&expr)),
    }
}

/// `DESCRIBE|DESC [TABLE] [db.]t` or `DESCRIBE|DESC (query)`: the query's text between the
/// outer parentheses.
fn parse_describe(p: &mut Parser, sql: &str, format: Option<String>) -> PResult<Statement> {
    p.next_token();
    if p.peek_token_ref().token == Token::LParen {
        let open = p.next_token();
        let start = byte_offset(sql, open.span.end);
        let mut depth = 1usize;
        let end = loop {
            let token = p.next_token();
            match token.token {
                Token::EOF => return Ok(p.expected("')'", token)?),
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        break byte_offset(sql, token.span.start);
                    }
                }
                _ => {}
            }
        };
        let text = sql.get(start..end).unwrap_or_default().trim().to_string();
        return Ok(Statement::Describe {
            target: DescribeTarget::Query(text),
            format,
        });
    }
    let _ = p.parse_keyword(Keyword::TABLE);
    let name = parse_table_name(p)?;
    Ok(Statement::Describe {
        target: DescribeTarget::Table(name),
        format,
    })
}

/// A query: its text up to `FORMAT` (or the end), every token consumed but a `;` (the trailing
/// one is gone already, so another statement follows: the caller's end check refuses it). The
/// query engine parses the text; a syntax error in it is reported there.
fn parse_select(p: &mut Parser, sql: &str, format: Option<String>) -> Statement {
    let start = p.peek_token_ref().span.start;
    let mut end = start;
    loop {
        if matches!(p.peek_token_ref().token, Token::EOF | Token::SemiColon) {
            break;
        }
        end = p.next_token().span.end;
    }
    let (start, end) = (byte_offset(sql, start), byte_offset(sql, end));
    let text = without_comments(sql.get(start..end).unwrap_or_default());
    Statement::Select(Select { text, format })
}

/// `text` with each comment (`--`, `#`, `/* */`) replaced by spaces of the same length: the query
/// engine's dialect does not read every comment ClickHouse does (`#`), and a comment never
/// changes a query's meaning.
fn without_comments(text: &str) -> String {
    let Ok(tokens) = Tokenizer::new(&ClickHouseDialect {}, text).tokenize_with_location() else {
        return text.to_string();
    };
    let offsets = super::sqlparser_glue::ByteOffsets::new(text);
    let mut out = text.to_string();
    for token in tokens {
        let is_comment = matches!(
            token.token,
            Token::Whitespace(
                sqlparser::tokenizer::Whitespace::SingleLineComment { .. }
                    | sqlparser::tokenizer::Whitespace::MultiLineComment(_)
            )
        );
        if !is_comment {
            continue;
        }
        let (from, to) = (offsets.of(token.span.start), offsets.of(token.span.end));
        if let Some(comment) = out.get(from..to) {
            // ASCII only, padded to the comment's byte length, so later spans still line up.
            let blank: String = comment
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            let padded = format!("{blank:<width$}", width = to - from);
            out.replace_range(from..to, &padded);
        }
    }
    out.trim_end().to_string()
}

/// A statement icetrim does not model: `NOT_IMPLEMENTED` when sqlparser (ClickHouse or generic
/// dialect) accepts it, else the ClickHouse dialect's `SYNTAX_ERROR`. A statement with more
/// operators than sqlparser's recursive tree may take is not parsed: it is not supported either
/// way.
fn refuse_unknown(sql: &str, first_line: usize) -> Error {
    let not_supported = || {
        Error::not_implemented(format!(
            "Statement {} is not supported by icetrim{}",
            statement_kind(sql),
            call_hint(sql)
        ))
    };
    if !sqlparser_can_parse(sql) {
        return not_supported();
    }
    let clickhouse = Parser::parse_sql(&ClickHouseDialect {}, sql);
    let parsed = clickhouse.is_ok() || Parser::parse_sql(&GenericDialect {}, sql).is_ok();
    match clickhouse {
        Err(error) if !parsed => parser_error(sql, first_line, &error),
        _ => not_supported(),
    }
}

/// For Spark's `CALL [catalog.]system.name(...)`: icetrim's spelling of the same call.
fn call_hint(sql: &str) -> String {
    let text = sql.trim_start();
    let is_call = text
        .get(..4)
        .is_some_and(|h| h.eq_ignore_ascii_case("call"))
        && text[4..].starts_with(char::is_whitespace);
    if !is_call {
        return String::new();
    }
    let rest = text[4..].trim_start();
    let qualified = rest.split('(').next().unwrap_or("").trim();
    let name = qualified.rsplit('.').next().unwrap_or("").trim_matches('`');
    let spec = crate::plan::procedures::procedure(name);
    let procedure = spec.map_or("<procedure>", |spec| spec.name);
    let unknown = if spec.is_none() && !name.is_empty() {
        super::bind::unknown_procedure_hint(name)
    } else {
        String::new()
    };
    format!(
        ": procedures run as ClickHouse runs them, ALTER TABLE <table> EXECUTE \
         {procedure}(<arguments>), the table named after ALTER TABLE, not as an argument{unknown}"
    )
}

/// The leading keywords of a statement, e.g. `INSERT INTO` or `ALTER TABLE`.
fn statement_kind(sql: &str) -> String {
    let mut lexer = Lexer::new(sql);
    let mut words = Vec::new();
    while words.len() < 2 {
        let token = lexer.next_significant();
        let word = token.text(sql);
        let keyword = token.kind == super::lexer::Kind::Word
            && matches!(Token::make_word(word, None), Token::Word(w) if w.keyword != Keyword::NoKeyword);
        if !keyword {
            break;
        }
        words.push(word.to_ascii_uppercase());
    }
    if words.is_empty() {
        "of this kind".to_string()
    } else {
        words.join(" ")
    }
}
