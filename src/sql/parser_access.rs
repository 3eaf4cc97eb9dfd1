//! Parsing the statements on users and grants (`sql::access`): `CREATE USER`, `DROP USER`,
//! `GRANT`, `REVOKE`, `SHOW GRANTS`, `SHOW USERS`.

use super::*;
use crate::sql::access::{GrantOn, GrantStatement, UserNames};

/// Whether the second token is the plain word `word` (`CREATE USER`, `SHOW GRANTS`).
pub(super) fn second_word_is(p: &Parser, word: &str) -> bool {
    let [_, next] = p.peek_tokens::<2>();
    matches!(next, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// `CREATE USER [IF NOT EXISTS] u [, …]` / `DROP USER [IF EXISTS] u [, …]` (the leading word is
/// next).
pub(super) fn parse_user_names(p: &mut Parser, create: bool) -> PResult<Statement> {
    p.next_token();
    p.next_token();
    let if_clause = if create {
        p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS])
    } else {
        p.parse_keywords(&[Keyword::IF, Keyword::EXISTS])
    };
    let names = parse_users(p)?;
    let users = UserNames { if_clause, names };
    Ok(if create {
        Statement::CreateUser(users)
    } else {
        Statement::DropUser(users)
    })
}

/// `u [, …]`: identifiers or string literals.
fn parse_users(p: &mut Parser) -> PResult<Vec<String>> {
    let mut names = Vec::new();
    loop {
        let next = p.next_token();
        match next.token {
            Token::Word(w) => names.push(w.value),
            Token::SingleQuotedString(s) => names.push(s),
            _ => return Ok(p.expected("a user name", next)?),
        }
        if !p.consume_token(&Token::Comma) {
            return Ok(names);
        }
    }
}

/// `GRANT privs ON … TO u [, …] [WITH GRANT OPTION]`.
pub(super) fn parse_grant(p: &mut Parser) -> PResult<Statement> {
    p.expect_keyword(Keyword::GRANT)?;
    let (privileges, on) = parse_privileges_on(p)?;
    p.expect_keyword(Keyword::TO)?;
    let users = parse_users(p)?;
    let grant_option = p.parse_keywords(&[Keyword::WITH, Keyword::GRANT, Keyword::OPTION]);
    Ok(Statement::Grant(GrantStatement {
        privileges,
        on,
        users,
        grant_option,
    }))
}

/// `REVOKE [GRANT OPTION FOR] privs ON … FROM u [, …]`.
pub(super) fn parse_revoke(p: &mut Parser) -> PResult<Statement> {
    p.expect_keyword(Keyword::REVOKE)?;
    let grant_option = p.parse_keywords(&[Keyword::GRANT, Keyword::OPTION, Keyword::FOR]);
    let (privileges, on) = parse_privileges_on(p)?;
    p.expect_keyword(Keyword::FROM)?;
    let users = parse_users(p)?;
    Ok(Statement::Revoke(GrantStatement {
        privileges,
        on,
        users,
        grant_option,
    }))
}

/// `priv [, priv …] ON object`: each privilege is the words up to `,` or `ON`.
fn parse_privileges_on(p: &mut Parser) -> PResult<(Vec<String>, GrantOn)> {
    let mut privileges = Vec::new();
    let mut words: Vec<String> = Vec::new();
    loop {
        let next = p.next_token();
        match &next.token {
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::ON => {
                if words.is_empty() {
                    return Ok(p.expected("a privilege", next)?);
                }
                privileges.push(words.join(" "));
                break;
            }
            Token::Word(w) if w.quote_style.is_none() => words.push(w.value.to_ascii_uppercase()),
            Token::Comma if !words.is_empty() => {
                privileges.push(std::mem::take(&mut words).join(" "))
            }
            _ => return Ok(p.expected("a privilege", next)?),
        }
    }
    Ok((privileges, parse_grant_object(p)?))
}

/// `*.*`, `*`, `db.*`, `db.t` or `t`.
fn parse_grant_object(p: &mut Parser) -> PResult<GrantOn> {
    if p.consume_token(&Token::Mul) {
        if p.consume_token(&Token::Period) {
            p.expect_token(&Token::Mul)?;
            return Ok(GrantOn::All);
        }
        return Ok(GrantOn::Database(None));
    }
    let first = p.parse_identifier()?.value;
    if !p.consume_token(&Token::Period) {
        return Ok(GrantOn::Table(TableName {
            database: None,
            table: first,
        }));
    }
    if p.consume_token(&Token::Mul) {
        return Ok(GrantOn::Database(Some(first)));
    }
    let table = p.parse_identifier()?.value;
    Ok(GrantOn::Table(TableName {
        database: Some(first),
        table,
    }))
}

/// `SHOW GRANTS [FOR u]` / `SHOW USERS` (the `SHOW` is next); `None` for another `SHOW`.
pub(super) fn parse_show_access(
    p: &mut Parser,
    format: Option<String>,
) -> PResult<Option<Statement>> {
    if second_word_is(p, "USERS") {
        p.next_token();
        p.next_token();
        return Ok(Some(Statement::ShowUsers { format }));
    }
    if !second_word_is(p, "GRANTS") {
        return Ok(None);
    }
    p.next_token();
    p.next_token();
    let user = if p.parse_keyword(Keyword::FOR) {
        let users = parse_users(p)?;
        match <[String; 1]>::try_from(users) {
            Ok([user]) => Some(user),
            Err(_) => {
                return Err(Error::not_implemented(
                    "SHOW GRANTS FOR more than one user is not supported by icetrim",
                )
                .into());
            }
        }
    } else {
        None
    };
    Ok(Some(Statement::ShowGrants { user, format }))
}
