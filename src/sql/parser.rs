//! The statement parser: sqlparser's tokenizer and expression parser, icetrim's own grammar on top.
//!
//! sqlparser 0.64 parses none of the `ALTER TABLE … EXECUTE` forms and reads `SET a = 1, b = 2`
//! wrongly in its ClickHouse dialect, so this module peeks the leading keywords itself and hands
//! sqlparser only expressions (procedure arguments), column definitions and the introspection
//! `SELECT`. A statement it does not model goes to sqlparser whole: if sqlparser accepts it, it is
//! refused with `NOT_IMPLEMENTED` ("Statement … is not supported by icetrim"), else it is a
//! `SYNTAX_ERROR`. Syntax errors carry the character position, line and column, ClickHouse-style.
//! The accepted language is written down in `grammar/icetrim.md`.

use sqlparser::ast::{Expr, UnaryOperator, Value};
use sqlparser::dialect::{ClickHouseDialect, GenericDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use super::alter_refs;
use super::ast::{
    AlterExecute, AlterTable, Arg, ArgValue, CreateDatabase, CreateTable, Engine, EngineArg,
    EngineName, Literal, OptimizeManifest, OptimizeTable, Statement, TableName,
};
use super::select::Select;
use crate::error::{Error, ErrorKind, Result};

/// Parses one statement (an optional trailing `;` is allowed). Lines in errors count from 1.
pub fn parse_statement(sql: &str) -> Result<Statement> {
    parse_statement_at(sql, 1)
}

/// Parses one statement that starts on line `first_line` of a script, so that syntax errors name
/// the script's line.
pub fn parse_statement_at(sql: &str, first_line: usize) -> Result<Statement> {
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
    match parse_known(&mut parser, format.as_ref()) {
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
fn parse_known(p: &mut Parser, format: Option<&FormatClause>) -> PResult<Option<Statement>> {
    let format_name = format.map(|f| f.name.clone());
    let statement = match p.peek_token().token {
        Token::Word(w) if w.quote_style.is_none() => match w.keyword {
            Keyword::EXPLAIN => parse_explain(p, format_name)?,
            Keyword::ALTER => parse_alter(p, format_name)?.map(|altered| match altered {
                Altered::Execute(alter) => Statement::AlterExecute(alter),
                Altered::Table(alter) => Statement::AlterTable(alter),
            }),
            Keyword::CREATE => parse_create(p)?,
            Keyword::DROP => parse_drop(p)?,
            Keyword::SHOW => parse_show(p, format_name)?,
            Keyword::USE => parse_use(p)?,
            Keyword::SET => Some(parse_set(p)?),
            Keyword::SELECT => Some(parse_select(p, format_name)?),
            Keyword::OPTIMIZE => parse_optimize(p, false, format_name)?,
            _ => None,
        },
        _ => None,
    };
    let Some(statement) = statement else {
        return Ok(None);
    };
    expect_end(p)?;
    if let Some(clause) = format {
        if statement.format().is_none() {
            return Err(positioned(
                "FORMAT is allowed only after a statement that returns rows",
                &clause.token,
            ));
        }
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

fn parse_explain(p: &mut Parser, format: Option<String>) -> PResult<Option<Statement>> {
    let [_, next] = p.peek_tokens::<2>();
    if matches!(&next, Token::Word(w) if w.keyword == Keyword::OPTIMIZE) {
        p.next_token();
        return parse_optimize(p, true, format);
    }
    if !matches!(next, Token::Word(w) if w.keyword == Keyword::ALTER) {
        return Ok(None);
    }
    p.next_token();
    Ok(parse_alter(p, format)?.map(|altered| match altered {
        Altered::Execute(alter) => Statement::Explain(Box::new(alter)),
        Altered::Table(alter) => Statement::ExplainAlterTable(Box::new(alter)),
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
fn parse_alter(p: &mut Parser, format: Option<String>) -> PResult<Option<Altered>> {
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
    let args = parse_args(p)?;
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
    if p.parse_keyword(Keyword::MANIFEST) {
        return Ok(Some(Statement::OptimizeManifest(OptimizeManifest {
            table,
            explain,
            format: format.filter(|_| explain),
        })));
    }
    if p.peek_token().token != Token::EOF {
        return Ok(None);
    }
    let optimize = OptimizeTable { table, format };
    Ok(Some(if explain {
        Statement::ExplainOptimize(optimize)
    } else {
        Statement::Optimize(optimize)
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
fn parse_args(p: &mut Parser) -> PResult<Vec<Arg>> {
    p.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    if p.consume_token(&Token::RParen) {
        return Ok(args);
    }
    loop {
        args.push(parse_arg(p)?);
        if !p.consume_token(&Token::Comma) {
            p.expect_token(&Token::RParen)?;
            return Ok(args);
        }
    }
}

/// `key = expr`, `key => expr` or a positional `expr`.
fn parse_arg(p: &mut Parser) -> PResult<Arg> {
    let [first, second] = p.peek_tokens::<2>();
    let name = match (first, second) {
        (Token::Word(word), Token::Eq | Token::RArrow) => {
            p.next_token();
            p.next_token();
            Some(word.value)
        }
        _ => None,
    };
    let expr = p.parse_expr()?;
    let value = match literal_of(&expr) {
        Some(literal) => ArgValue::Literal(literal),
        None => ArgValue::Expr(expr.to_string()),
    };
    Ok(Arg { name, value })
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
            .map(Literal::Array),
        Expr::Tuple(items) if items.len() > 1 => items
            .iter()
            .map(literal_of)
            .collect::<Option<Vec<_>>>()
            .map(Literal::Tuple),
        _ => None,
    }
}

fn parse_literal(p: &mut Parser, what: &str) -> PResult<Literal> {
    let start = p.peek_token();
    let expr = p.parse_expr()?;
    match literal_of(&expr) {
        Some(literal) => Ok(literal),
        None => Err(positioned(
            &format!("Expected: a literal {what}, found: {expr}"),
            &start,
        )),
    }
}

/// `CREATE TABLE [IF NOT EXISTS] name [(cols)] ENGINE = Name(args) [SETTINGS k = v, ...]`.
fn parse_create(p: &mut Parser) -> PResult<Option<Statement>> {
    let [_, next] = p.peek_tokens::<2>();
    if matches!(&next, Token::Word(w) if w.keyword == Keyword::DATABASE) {
        return parse_create_database(p).map(Some);
    }
    if !matches!(next, Token::Word(w) if w.keyword == Keyword::TABLE) {
        return Ok(None);
    }
    p.next_token();
    p.next_token();
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parse_table_name(p)?;
    let columns = if p.consume_token(&Token::LParen) {
        Some(parse_column_list(p)?)
    } else {
        None
    };
    p.expect_keyword(Keyword::ENGINE)?;
    p.expect_token(&Token::Eq)?;
    let engine = parse_engine(p)?;
    let settings = if p.parse_keyword(Keyword::SETTINGS) {
        parse_assignments(p)?
    } else {
        Vec::new()
    };
    Ok(Some(Statement::CreateTable(CreateTable {
        if_not_exists,
        name,
        columns,
        engine,
        settings,
    })))
}

/// `CREATE DATABASE [IF NOT EXISTS] db ENGINE = Name([literal, ...]) [SETTINGS k = v, ...]`.
fn parse_create_database(p: &mut Parser) -> PResult<Statement> {
    p.next_token();
    p.next_token();
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_identifier()?.value;
    p.expect_keyword(Keyword::ENGINE)?;
    p.expect_token(&Token::Eq)?;
    let engine = p.parse_identifier()?.value;
    let mut args = Vec::new();
    if p.consume_token(&Token::LParen) && !p.consume_token(&Token::RParen) {
        loop {
            args.push(parse_literal(p, "engine argument")?);
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    let settings = if p.parse_keyword(Keyword::SETTINGS) {
        parse_assignments(p)?
    } else {
        Vec::new()
    };
    Ok(Statement::CreateDatabase(CreateDatabase {
        if_not_exists,
        name,
        engine,
        args,
        settings,
    }))
}

/// The column definitions up to the closing `)`, each kept as canonical text of its tokens (types
/// are not interpreted: `Nullable(String)`, `DateTime64(6, 'UTC')` stay as written).
fn parse_column_list(p: &mut Parser) -> PResult<Vec<String>> {
    let mut columns = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let mut depth = 0usize;
    loop {
        let next = p.next_token();
        match &next.token {
            Token::EOF => return Ok(p.expected("')' closing the column list", next)?),
            Token::LParen => depth += 1,
            Token::RParen | Token::Comma if depth == 0 => {
                if !matches!(current.first(), Some(Token::Word(_))) {
                    return Ok(p.expected("a column definition", next)?);
                }
                columns.push(render_tokens(&std::mem::take(&mut current)));
                if next.token == Token::RParen {
                    return Ok(columns);
                }
                continue;
            }
            Token::RParen => depth -= 1,
            _ => {}
        }
        current.push(next.token);
    }
}

/// Tokens as canonical text: one space between tokens, none inside parentheses or before a comma.
fn render_tokens(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut previous: Option<&Token> = None;
    for token in tokens {
        let glued = matches!(token, Token::LParen | Token::RParen | Token::Comma)
            || matches!(previous, Some(Token::LParen) | None);
        if !glued {
            out.push(' ');
        }
        match token {
            Token::SingleQuotedString(value) => {
                out.push_str(&Literal::String(value.clone()).to_string())
            }
            other => out.push_str(&other.to_string()),
        }
        previous = Some(token);
    }
    out
}

fn parse_engine(p: &mut Parser) -> PResult<Engine> {
    let ident = p.parse_identifier()?;
    let name = EngineName::from_name(&ident.value).ok_or_else(|| {
        Error::not_implemented(format!(
            "Engine {} is not supported by icetrim; use IcebergLocal, IcebergS3 or IcebergAzure",
            ident.value
        ))
    })?;
    p.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    if !p.consume_token(&Token::RParen) {
        loop {
            args.push(parse_engine_arg(p)?);
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    Ok(Engine { name, args })
}

fn parse_engine_arg(p: &mut Parser) -> PResult<EngineArg> {
    if let Token::Word(w) = p.peek_token().token {
        if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("NOSIGN") {
            p.next_token();
            return Ok(EngineArg::NoSign);
        }
    }
    Ok(EngineArg::Literal(parse_literal(p, "engine argument")?))
}

/// `name = literal {, name = literal}`.
fn parse_assignments(p: &mut Parser) -> PResult<Vec<(String, Literal)>> {
    let mut assignments = Vec::new();
    loop {
        let name = p.parse_identifier()?.value;
        p.expect_token(&Token::Eq)?;
        let value = parse_literal(p, "setting value")?;
        assignments.push((name, value));
        if !p.consume_token(&Token::Comma) {
            return Ok(assignments);
        }
    }
}

fn parse_drop(p: &mut Parser) -> PResult<Option<Statement>> {
    let [_, next] = p.peek_tokens::<2>();
    if matches!(&next, Token::Word(w) if w.keyword == Keyword::DATABASE) {
        p.next_token();
        p.next_token();
        let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let name = p.parse_identifier()?.value;
        return Ok(Some(Statement::DropDatabase { if_exists, name }));
    }
    if !matches!(next, Token::Word(w) if w.keyword == Keyword::TABLE) {
        return Ok(None);
    }
    p.next_token();
    p.next_token();
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = parse_table_name(p)?;
    Ok(Some(Statement::DropTable { if_exists, name }))
}

fn parse_show(p: &mut Parser, format: Option<String>) -> PResult<Option<Statement>> {
    let [_, next, third] = p.peek_tokens::<3>();
    let keyword = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    if keyword(&next, Keyword::TABLES) {
        p.next_token();
        p.next_token();
        let from_db = if p
            .parse_one_of_keywords(&[Keyword::FROM, Keyword::IN])
            .is_some()
        {
            Some(p.parse_identifier()?.value)
        } else {
            None
        };
        return Ok(Some(Statement::ShowTables { from_db, format }));
    }
    if keyword(&next, Keyword::DATABASES) {
        p.next_token();
        p.next_token();
        return Ok(Some(Statement::ShowDatabases { format }));
    }
    if keyword(&next, Keyword::CREATE) && keyword(&third, Keyword::DATABASE) {
        p.next_token();
        p.next_token();
        p.next_token();
        let name = p.parse_identifier()?.value;
        return Ok(Some(Statement::ShowCreateDatabase { name, format }));
    }
    if keyword(&next, Keyword::CREATE) && keyword(&third, Keyword::TABLE) {
        p.next_token();
        p.next_token();
        p.next_token();
        let name = parse_table_name(p)?;
        return Ok(Some(Statement::ShowCreateTable { name, format }));
    }
    Ok(None)
}

fn parse_use(p: &mut Parser) -> PResult<Option<Statement>> {
    p.expect_keyword(Keyword::USE)?;
    Ok(Some(Statement::Use(p.parse_identifier()?.value)))
}

fn parse_set(p: &mut Parser) -> PResult<Statement> {
    p.expect_keyword(Keyword::SET)?;
    Ok(Statement::Set(parse_assignments(p)?))
}

fn parse_select(p: &mut Parser, format: Option<String>) -> PResult<Statement> {
    let query = p.parse_query()?;
    Ok(Statement::Select(Select::from_query(&query, format)?))
}

/// A statement icetrim does not model: `NOT_IMPLEMENTED` when sqlparser (ClickHouse or generic
/// dialect) accepts it, else the ClickHouse dialect's `SYNTAX_ERROR`.
fn refuse_unknown(sql: &str, first_line: usize) -> Error {
    let clickhouse = Parser::parse_sql(&ClickHouseDialect {}, sql);
    let parsed = clickhouse.is_ok() || Parser::parse_sql(&GenericDialect {}, sql).is_ok();
    match clickhouse {
        Err(error) if !parsed => parser_error(sql, first_line, &error),
        _ => Error::not_implemented(format!(
            "Statement {} is not supported by icetrim",
            statement_kind(sql)
        )),
    }
}

/// The leading keywords of a statement, e.g. `INSERT INTO` or `ALTER TABLE`.
fn statement_kind(sql: &str) -> String {
    let tokens = Tokenizer::new(&ClickHouseDialect {}, sql)
        .tokenize()
        .unwrap_or_default();
    let words: Vec<String> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .take(2)
        .map_while(|t| match t {
            Token::Word(w) if w.keyword != Keyword::NoKeyword && w.quote_style.is_none() => {
                Some(w.value.to_ascii_uppercase())
            }
            _ => None,
        })
        .collect();
    if words.is_empty() {
        "of this kind".to_string()
    } else {
        words.join(" ")
    }
}

fn parser_error(sql: &str, first_line: usize, error: &ParserError) -> Error {
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
        if let Some((line, column)) = tail.split_once(", Column: ") {
            if let (Ok(line), Ok(column)) = (line.parse(), column.parse()) {
                return (&text[..at], Location { line, column });
            }
        }
    }
    (text, Location { line: 0, column: 0 })
}

/// `Syntax error: failed at position P (line L, col C): message`, ClickHouse-style. `P` is the
/// 1-based character offset in the statement; a location of line 0 means the end of the text.
fn syntax_error(sql: &str, first_line: usize, message: &str, location: Location) -> Error {
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
