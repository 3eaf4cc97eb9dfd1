//! `SYSTEM MAINTAIN TABLE [db.]t | DATABASE db [NAMESPACE 'ns'] [SETTINGS k = v, ...]`.

use super::ddl::parse_assignments;
use super::*;
use crate::sql::maintain_ast::{MaintainTarget, SystemMaintain};

fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Whether the tokens from the `skip`-th on read `SYSTEM MAINTAIN`.
pub(super) fn starts(p: &Parser, skip: usize) -> bool {
    is_word(&p.peek_nth_token(skip).token, "SYSTEM")
        && is_word(&p.peek_nth_token(skip + 1).token, "MAINTAIN")
}

/// The statement, from its `SYSTEM` on.
pub(super) fn parse(p: &mut Parser, sql: &str, format: Option<String>) -> PResult<Statement> {
    p.next_token();
    p.next_token();
    let target = if p.parse_keyword(Keyword::TABLE) {
        MaintainTarget::Table(parse_table_name(p)?)
    } else if p.parse_keyword(Keyword::DATABASE) {
        let name = p.parse_identifier()?.value;
        let namespace = if is_word(&p.peek_token().token, "NAMESPACE") {
            p.next_token();
            let next = p.next_token();
            match next.token {
                Token::SingleQuotedString(namespace) => Some(namespace),
                _ => return Ok(p.expected("a namespace as a string ('sales')", next)?),
            }
        } else {
            None
        };
        MaintainTarget::Database { name, namespace }
    } else {
        let next = p.peek_token();
        return Ok(p.expected("TABLE or DATABASE after SYSTEM MAINTAIN", next)?);
    };
    let settings = if p.parse_keyword(Keyword::SETTINGS) {
        parse_assignments(p, sql)?
    } else {
        Vec::new()
    };
    Ok(Statement::SystemMaintain(SystemMaintain {
        target,
        settings,
        format,
    }))
}

#[cfg(test)]
mod tests {
    use crate::sql::{MaintainTarget, Statement, parse_statement};

    #[test]
    fn parses_and_prints_back() {
        for sql in [
            "SYSTEM MAINTAIN TABLE t",
            "SYSTEM MAINTAIN TABLE db.t SETTINGS dry_run = 1",
            "SYSTEM MAINTAIN DATABASE lake NAMESPACE 'sales' SETTINGS iceberg_maintain_orphans_enabled = 1, dry_run = 1 FORMAT TSV",
            "EXPLAIN SYSTEM MAINTAIN DATABASE lake",
        ] {
            let statement = parse_statement(sql).unwrap();
            assert_eq!(statement.to_string(), sql);
            assert_eq!(parse_statement(&statement.to_string()).unwrap(), statement);
        }
        let Statement::SystemMaintain(m) = parse_statement("system maintain table t").unwrap()
        else {
            panic!("not SYSTEM MAINTAIN");
        };
        assert_eq!(
            m.target,
            MaintainTarget::Table(crate::sql::TableName {
                database: None,
                table: "t".into()
            })
        );
    }

    #[test]
    fn refuses_other_targets() {
        let err = parse_statement("SYSTEM MAINTAIN VIEW v").unwrap_err();
        assert_eq!(err.code(), 62, "{err}");
    }
}
