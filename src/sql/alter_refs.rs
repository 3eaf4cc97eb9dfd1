//! `ALTER TABLE` statements on refs and properties (Spark's Iceberg DDL,
//! `IcebergSqlExtensions.g4`, and Spark's `SET/UNSET TBLPROPERTIES`): the tree, its canonical
//! printing, and its parsing (called by [`super::parser`] after `ALTER TABLE name`).
//!
//! ```text
//! ALTER TABLE t CREATE BRANCH [IF NOT EXISTS] b branchOptions
//! ALTER TABLE t [CREATE OR] REPLACE BRANCH b branchOptions
//! ALTER TABLE t CREATE TAG [IF NOT EXISTS] v tagOptions
//! ALTER TABLE t [CREATE OR] REPLACE TAG v tagOptions
//! ALTER TABLE t DROP {BRANCH|TAG} [IF EXISTS] name
//! ALTER TABLE t SET TBLPROPERTIES ('k' = 'v' [, ...])
//! ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('k' [, ...])
//! branchOptions: [AS OF VERSION n] [RETAIN n unit] [WITH SNAPSHOT RETENTION {n SNAPSHOTS [n unit] | n unit}]
//! tagOptions:    [AS OF VERSION n] [RETAIN n unit]
//! unit:          DAYS | HOURS | MINUTES
//! ```
//! As in Spark's grammar, `OR REPLACE` and `IF NOT EXISTS` do not combine, and the keywords are
//! case-insensitive.

use std::fmt;

use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::ast::{TableName, write_format, write_ident, write_string};
use crate::plan::{CreateMode, RefType, TimeUnit};

/// `ALTER TABLE [db.]t <action>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterTable {
    pub table: TableName,
    pub action: AlterAction,
    /// Output format of `EXPLAIN` (the statement itself returns no rows).
    pub format: Option<String>,
}

/// What an `ALTER TABLE` on refs or properties does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterAction {
    PutRef {
        kind: RefType,
        mode: CreateMode,
        name: String,
        /// `AS OF VERSION n`.
        as_of: Option<i64>,
        /// `RETAIN n unit`.
        retain: Option<(u64, TimeUnit)>,
        /// `WITH SNAPSHOT RETENTION n SNAPSHOTS` (branches).
        min_snapshots: Option<u64>,
        /// `WITH SNAPSHOT RETENTION ... n unit` (branches).
        snapshot_age: Option<(u64, TimeUnit)>,
    },
    DropRef {
        kind: RefType,
        name: String,
        if_exists: bool,
    },
    SetProperties(Vec<(String, String)>),
    UnsetProperties {
        if_exists: bool,
        keys: Vec<String>,
    },
}

impl fmt::Display for AlterTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER TABLE {} {}", self.table, self.action)?;
        write_format(f, &self.format)
    }
}

impl fmt::Display for AlterAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlterAction::PutRef {
                kind,
                mode,
                name,
                as_of,
                retain,
                min_snapshots,
                snapshot_age,
            } => {
                f.write_str(match mode {
                    CreateMode::Create | CreateMode::CreateIfNotExists => "CREATE ",
                    CreateMode::Replace => "REPLACE ",
                    CreateMode::CreateOrReplace => "CREATE OR REPLACE ",
                })?;
                f.write_str(kind.keyword())?;
                if *mode == CreateMode::CreateIfNotExists {
                    f.write_str(" IF NOT EXISTS")?;
                }
                f.write_str(" ")?;
                write_ident(f, name)?;
                if let Some(id) = as_of {
                    write!(f, " AS OF VERSION {id}")?;
                }
                if let Some((n, unit)) = retain {
                    write!(f, " RETAIN {n} {}", unit.keyword())?;
                }
                if min_snapshots.is_some() || snapshot_age.is_some() {
                    f.write_str(" WITH SNAPSHOT RETENTION")?;
                    if let Some(n) = min_snapshots {
                        write!(f, " {n} SNAPSHOTS")?;
                    }
                    if let Some((n, unit)) = snapshot_age {
                        write!(f, " {n} {}", unit.keyword())?;
                    }
                }
                Ok(())
            }
            AlterAction::DropRef {
                kind,
                name,
                if_exists,
            } => {
                write!(f, "DROP {}", kind.keyword())?;
                if *if_exists {
                    f.write_str(" IF EXISTS")?;
                }
                f.write_str(" ")?;
                write_ident(f, name)
            }
            AlterAction::SetProperties(pairs) => {
                f.write_str("SET TBLPROPERTIES (")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_string(f, k)?;
                    f.write_str(" = ")?;
                    write_string(f, v)?;
                }
                f.write_str(")")
            }
            AlterAction::UnsetProperties { if_exists, keys } => {
                f.write_str("UNSET TBLPROPERTIES ")?;
                if *if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                f.write_str("(")?;
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_string(f, k)?;
                }
                f.write_str(")")
            }
        }
    }
}

type PResult<T> = Result<T, ParserError>;

/// Whether the next token is the unquoted word `word` (any case).
pub(super) fn peek_word(p: &Parser, n: usize, word: &str) -> bool {
    matches!(p.peek_nth_token(n).token, Token::Word(w) if w.quote_style.is_none()
        && w.value.eq_ignore_ascii_case(word))
}

fn take_word(p: &mut Parser, word: &str) -> bool {
    if peek_word(p, 0, word) {
        p.next_token();
        true
    } else {
        false
    }
}

fn expect_word(p: &mut Parser, word: &str) -> PResult<()> {
    if take_word(p, word) {
        Ok(())
    } else {
        let found = p.peek_token();
        p.expected(word, found)
    }
}

fn take_words(p: &mut Parser, words: &[&str]) -> bool {
    if words.iter().enumerate().all(|(i, w)| peek_word(p, i, w)) {
        for _ in words {
            p.next_token();
        }
        true
    } else {
        false
    }
}

/// Whether the tokens after `ALTER TABLE name` start one of these statements.
pub(super) fn starts_action(p: &Parser) -> bool {
    let ref_kind = |n: usize| peek_word(p, n, "BRANCH") || peek_word(p, n, "TAG");
    (peek_word(p, 0, "CREATE")
        && (ref_kind(1) || (peek_word(p, 1, "OR") && peek_word(p, 2, "REPLACE"))))
        || (peek_word(p, 0, "REPLACE") && ref_kind(1))
        || (peek_word(p, 0, "DROP") && ref_kind(1))
        || ((peek_word(p, 0, "SET") || peek_word(p, 0, "UNSET"))
            && peek_word(p, 1, "TBLPROPERTIES"))
}

/// The action after `ALTER TABLE name` ([`starts_action`] said yes).
pub(super) fn parse_action(p: &mut Parser) -> PResult<AlterAction> {
    if take_word(p, "DROP") {
        let kind = parse_ref_kind(p)?;
        let if_exists = take_words(p, &["IF", "EXISTS"]);
        let name = p.parse_identifier()?.value;
        return Ok(AlterAction::DropRef {
            kind,
            name,
            if_exists,
        });
    }
    if take_word(p, "SET") {
        expect_word(p, "TBLPROPERTIES")?;
        p.expect_token(&Token::LParen)?;
        let mut pairs = Vec::new();
        loop {
            let key = parse_string(p, "a property key")?;
            p.expect_token(&Token::Eq)?;
            let value = parse_value(p)?;
            pairs.push((key, value));
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                return Ok(AlterAction::SetProperties(pairs));
            }
        }
    }
    if take_word(p, "UNSET") {
        expect_word(p, "TBLPROPERTIES")?;
        let if_exists = take_words(p, &["IF", "EXISTS"]);
        p.expect_token(&Token::LParen)?;
        let mut keys = Vec::new();
        loop {
            keys.push(parse_string(p, "a property key")?);
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                return Ok(AlterAction::UnsetProperties { if_exists, keys });
            }
        }
    }
    let mode = if take_words(p, &["CREATE", "OR", "REPLACE"]) {
        CreateMode::CreateOrReplace
    } else if take_word(p, "REPLACE") {
        CreateMode::Replace
    } else {
        expect_word(p, "CREATE")?;
        CreateMode::Create
    };
    let kind = parse_ref_kind(p)?;
    let mode = if mode == CreateMode::Create && take_words(p, &["IF", "NOT", "EXISTS"]) {
        CreateMode::CreateIfNotExists
    } else {
        mode
    };
    let name = p.parse_identifier()?.value;
    let as_of = if take_words(p, &["AS", "OF", "VERSION"]) {
        Some(parse_snapshot_id(p)?)
    } else {
        None
    };
    let retain = if take_word(p, "RETAIN") {
        Some((parse_count(p)?, parse_unit(p)?))
    } else {
        None
    };
    let (mut min_snapshots, mut snapshot_age) = (None, None);
    if kind == RefType::Branch && take_words(p, &["WITH", "SNAPSHOT", "RETENTION"]) {
        let n = parse_count(p)?;
        if take_word(p, "SNAPSHOTS") {
            min_snapshots = Some(n);
            if matches!(p.peek_token().token, Token::Number(..)) {
                snapshot_age = Some((parse_count(p)?, parse_unit(p)?));
            }
        } else {
            snapshot_age = Some((n, parse_unit(p)?));
        }
    }
    Ok(AlterAction::PutRef {
        kind,
        mode,
        name,
        as_of,
        retain,
        min_snapshots,
        snapshot_age,
    })
}

fn parse_ref_kind(p: &mut Parser) -> PResult<RefType> {
    if take_word(p, "BRANCH") {
        Ok(RefType::Branch)
    } else if take_word(p, "TAG") {
        Ok(RefType::Tag)
    } else {
        let found = p.peek_token();
        p.expected("BRANCH or TAG", found)
    }
}

fn parse_unit(p: &mut Parser) -> PResult<TimeUnit> {
    for (word, unit) in [
        ("DAYS", TimeUnit::Days),
        ("HOURS", TimeUnit::Hours),
        ("MINUTES", TimeUnit::Minutes),
    ] {
        if take_word(p, word) {
            return Ok(unit);
        }
    }
    let found = p.peek_token();
    p.expected("DAYS, HOURS or MINUTES", found)
}

fn parse_count(p: &mut Parser) -> PResult<u64> {
    let next = p.next_token();
    match &next.token {
        Token::Number(text, _) => match text.parse::<u64>() {
            Ok(n) => Ok(n),
            Err(_) => p.expected("a whole number", next),
        },
        _ => p.expected("a whole number", next),
    }
}

fn parse_snapshot_id(p: &mut Parser) -> PResult<i64> {
    let negative = p.consume_token(&Token::Minus);
    let next = p.next_token();
    let parsed = match &next.token {
        Token::Number(text, _) => {
            let text = if negative {
                format!("-{text}")
            } else {
                text.clone()
            };
            text.parse::<i64>().ok()
        }
        _ => None,
    };
    match parsed {
        Some(id) => Ok(id),
        None => p.expected("a snapshot id (Int64)", next),
    }
}

fn parse_string(p: &mut Parser, what: &str) -> PResult<String> {
    let next = p.next_token();
    match next.token {
        Token::SingleQuotedString(s) => Ok(s),
        _ => p.expected(what, next),
    }
}

/// A property value: a string, or a number / `true` / `false` written bare (kept as text).
fn parse_value(p: &mut Parser) -> PResult<String> {
    let next = p.next_token();
    match &next.token {
        Token::SingleQuotedString(s) => Ok(s.clone()),
        Token::Number(text, _) => Ok(text.clone()),
        Token::Word(w)
            if w.quote_style.is_none()
                && (w.value.eq_ignore_ascii_case("true")
                    || w.value.eq_ignore_ascii_case("false")) =>
        {
            Ok(w.value.to_ascii_lowercase())
        }
        _ => p.expected("a property value", next),
    }
}
