//! The introspection `SELECT` in its exact form, read in one pass of icetrim's lexer (see
//! [`super::fast`]): `SELECT * | col, … FROM system.<table> [WHERE cond AND …] [ORDER BY col
//! [ASC|DESC], …] [LIMIT n] [FORMAT f]`, a `cond` being `col op literal` and parentheses around
//! conditions being allowed (they group `AND`s only, so they are dropped). Anything else (a
//! keyword as a bare name, `OR`, functions, other clauses) answers `None`: sqlparser's path reads
//! the statement and says what is not supported.

use super::Statement;
use super::ast::is_bare_identifier;
use super::fast::{ident_value, is_end};
use super::lexer::{Kind, Punct, Token};
use super::literal_parse::{LexSource, read_literal};
use super::select::{CompareOp, Comparison, OrderKey, Projection, Select, SystemTable};

/// The statement, when it is of the exact form.
pub(crate) fn parse(sql: &str) -> Option<Statement> {
    let mut cursor = LexSource::at(sql, 0);
    if !cursor.next_token().is_word(sql, "SELECT") {
        return None;
    }
    let projection = projection(sql, &mut cursor)?;
    if !cursor.next_token().is_word(sql, "FROM") {
        return None;
    }
    let table = system_table(sql, &mut cursor)?;
    let mut clause = cursor.next_token();
    let mut filter = Vec::new();
    if clause.is_word(sql, "WHERE") {
        filter = conditions(sql, &mut cursor)?;
        clause = cursor.next_token();
    }
    let mut order_by = Vec::new();
    if clause.is_word(sql, "ORDER") {
        if !cursor.next_token().is_word(sql, "BY") {
            return None;
        }
        order_by = order_keys(sql, &mut cursor)?;
        clause = cursor.next_token();
    }
    let mut limit = None;
    if clause.is_word(sql, "LIMIT") {
        let number = cursor.next_token();
        if number.kind != Kind::Number {
            return None;
        }
        limit = Some(number.text(sql).parse::<u64>().ok()?);
        clause = cursor.next_token();
    }
    let mut format = None;
    if clause.is_word(sql, "FORMAT") {
        let name = cursor.next_token();
        if !matches!(name.kind, Kind::Word | Kind::QuotedIdent) {
            return None;
        }
        format = Some(ident_value(sql, name)?);
        clause = cursor.next_token();
    }
    if clause.kind == Kind::Punct(Punct::Semicolon) {
        clause = cursor.next_token();
    }
    if !is_end(clause) {
        return None;
    }
    Some(Statement::Select(Select {
        projection,
        table,
        filter,
        order_by,
        limit,
        format,
    }))
}

/// A column name: a quoted identifier, or a bare word that needs no quotes.
fn column(sql: &str, token: Token) -> Option<String> {
    match token.kind {
        Kind::QuotedIdent => ident_value(sql, token),
        Kind::Word if is_bare_identifier(token.text(sql)) => Some(token.text(sql).to_string()),
        _ => None,
    }
}

fn projection(sql: &str, cursor: &mut LexSource<'_>) -> Option<Projection> {
    if cursor.peek_token().kind == Kind::Punct(Punct::Star) {
        cursor.next_token();
        return Some(Projection::All);
    }
    let mut columns = Vec::new();
    loop {
        columns.push(column(sql, cursor.next_token())?);
        if cursor.peek_token().kind != Kind::Punct(Punct::Comma) {
            return Some(Projection::Columns(columns));
        }
        cursor.next_token();
    }
}

fn system_table(sql: &str, cursor: &mut LexSource<'_>) -> Option<SystemTable> {
    let database = ident_value(sql, cursor.next_token())?;
    if database != "system" || cursor.next_token().kind != Kind::Punct(Punct::Period) {
        return None;
    }
    SystemTable::from_name(&ident_value(sql, cursor.next_token())?)
}

fn compare_op(token: Token) -> Option<CompareOp> {
    Some(match token.kind {
        Kind::Punct(Punct::Eq | Punct::DoubleEq) => CompareOp::Eq,
        Kind::Punct(Punct::NotEq) => CompareOp::NotEq,
        Kind::Punct(Punct::Lt) => CompareOp::Lt,
        Kind::Punct(Punct::LtEq) => CompareOp::LtEq,
        Kind::Punct(Punct::Gt) => CompareOp::Gt,
        Kind::Punct(Punct::GtEq) => CompareOp::GtEq,
        _ => return None,
    })
}

/// `cond AND cond …` with parentheses around any of them; stops before the next clause.
fn conditions(sql: &str, cursor: &mut LexSource<'_>) -> Option<Vec<Comparison>> {
    let mut filter = Vec::new();
    let mut open = 0usize;
    loop {
        while cursor.peek_token().kind == Kind::Punct(Punct::LParen) {
            cursor.next_token();
            open += 1;
        }
        let name = column(sql, cursor.next_token())?;
        let op = compare_op(cursor.next_token())?;
        let value = read_literal(cursor)?;
        filter.push(Comparison {
            column: name,
            op,
            value,
        });
        while open > 0 && cursor.peek_token().kind == Kind::Punct(Punct::RParen) {
            cursor.next_token();
            open -= 1;
        }
        if !cursor.peek_token().is_word(sql, "AND") {
            return (open == 0).then_some(filter);
        }
        cursor.next_token();
    }
}

fn order_keys(sql: &str, cursor: &mut LexSource<'_>) -> Option<Vec<OrderKey>> {
    let mut keys = Vec::new();
    loop {
        let name = column(sql, cursor.next_token())?;
        let next = cursor.peek_token();
        let ascending = if next.is_word(sql, "ASC") {
            Some(true)
        } else if next.is_word(sql, "DESC") {
            Some(false)
        } else {
            None
        };
        if ascending.is_some() {
            cursor.next_token();
        }
        keys.push(OrderKey {
            column: name,
            ascending,
        });
        if cursor.peek_token().kind != Kind::Punct(Punct::Comma) {
            return Some(keys);
        }
        cursor.next_token();
    }
}
