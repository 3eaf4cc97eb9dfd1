//! The statements that register and describe tables and databases, and set settings: `CREATE
//! TABLE … ENGINE = …`, `CREATE DATABASE … ENGINE = DataLakeCatalog(…)`, `DROP`, `SHOW`, `USE`,
//! `SET`. The procedure statements and the dispatch are in `parser.rs`.

use super::*;

/// `CREATE TABLE [IF NOT EXISTS] name [(cols)] ENGINE = Name(args) [SETTINGS k = v, ...]`.
pub(super) fn parse_create(p: &mut Parser, sql: &str) -> PResult<Option<Statement>> {
    let [_, next] = p.peek_tokens::<2>();
    if matches!(&next, Token::Word(w) if w.keyword == Keyword::DATABASE) {
        return parse_create_database(p, sql).map(Some);
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
    let engine = parse_engine(p, sql)?;
    let settings = if p.parse_keyword(Keyword::SETTINGS) {
        parse_assignments(p, sql)?
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
pub(super) fn parse_create_database(p: &mut Parser, sql: &str) -> PResult<Statement> {
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
            args.push(parse_literal(p, sql, "engine argument")?);
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    let settings = if p.parse_keyword(Keyword::SETTINGS) {
        parse_assignments(p, sql)?
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
pub(super) fn parse_column_list(p: &mut Parser) -> PResult<Vec<String>> {
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
pub(super) fn render_tokens(tokens: &[Token]) -> String {
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

pub(super) fn parse_engine(p: &mut Parser, sql: &str) -> PResult<Engine> {
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
            args.push(parse_engine_arg(p, sql)?);
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    Ok(Engine { name, args })
}

pub(super) fn parse_engine_arg(p: &mut Parser, sql: &str) -> PResult<EngineArg> {
    if let Token::Word(w) = p.peek_token().token
        && w.quote_style.is_none()
        && w.value.eq_ignore_ascii_case("NOSIGN")
    {
        p.next_token();
        return Ok(EngineArg::NoSign);
    }
    Ok(EngineArg::Literal(parse_literal(
        p,
        sql,
        "engine argument",
    )?))
}

/// `name = literal {, name = literal}`.
pub(super) fn parse_assignments(p: &mut Parser, sql: &str) -> PResult<Vec<(String, Literal)>> {
    let mut assignments = Vec::new();
    loop {
        let name = p.parse_identifier()?.value;
        p.expect_token(&Token::Eq)?;
        let value = parse_literal(p, sql, "setting value")?;
        assignments.push((name, value));
        if !p.consume_token(&Token::Comma) {
            return Ok(assignments);
        }
    }
}

pub(super) fn parse_drop(p: &mut Parser) -> PResult<Option<Statement>> {
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

pub(super) fn parse_show(p: &mut Parser, format: Option<String>) -> PResult<Option<Statement>> {
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
    let changed = matches!(&next, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("CHANGED"));
    let settings_at = if changed { &third } else { &next };
    if keyword(settings_at, Keyword::SETTINGS) {
        p.next_token();
        p.next_token();
        if changed {
            p.next_token();
        }
        let like = match p.parse_one_of_keywords(&[Keyword::LIKE, Keyword::ILIKE]) {
            Some(which) => {
                let pattern = p.parse_literal_string()?;
                Some((pattern, which == Keyword::ILIKE))
            }
            None => None,
        };
        return Ok(Some(Statement::ShowSettings {
            changed,
            like,
            format,
        }));
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

pub(super) fn parse_use(p: &mut Parser) -> PResult<Option<Statement>> {
    p.expect_keyword(Keyword::USE)?;
    Ok(Some(Statement::Use(p.parse_identifier()?.value)))
}

pub(super) fn parse_set(p: &mut Parser, sql: &str) -> PResult<Statement> {
    p.expect_keyword(Keyword::SET)?;
    Ok(Statement::Set(parse_assignments(p, sql)?))
}
