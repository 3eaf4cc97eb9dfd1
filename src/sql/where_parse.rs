//! The `where` predicate of `rewrite_data_files` read in one pass of icetrim's lexer, with
//! explicit operand and operator stacks (shunting-yard): a chain of 50,000 `OR`s becomes one
//! [`Predicate::Or`] of 50,000 comparisons and costs no recursion; `NOT` and parentheses nest up
//! to `max_parser_depth` (`TOO_DEEP_RECURSION` beyond).
//!
//! Read here: comparisons of a column with a literal (either side), `[NOT] IN (literals)`,
//! `IS [NOT] NULL`, `[NOT] BETWEEN literal AND literal`, `AND`, `OR`, `NOT`, parentheses; a column
//! is a name that needs no quotes or a quoted one, dotted for nested fields. Anything else answers
//! `None` and sqlparser's path ([`super::bind_compact`]) reads the text and says what is wrong.

use super::ast::is_bare_identifier;
use super::fast::{ident_value, is_end};
use super::lexer::{Kind, Punct, Token};
use super::limits::ParseLimits;
use super::literal_parse::{LexSource, read_literal};
use crate::error::Result;
use crate::literal::Literal;
use crate::plan::{CmpOp, Predicate};

/// An operator waiting for its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Not,
    And,
    Or,
    /// An open parenthesis.
    Group,
}

/// The operand and operator stacks.
struct Stacks {
    operands: Vec<Predicate>,
    ops: Vec<Op>,
    /// `NOT`s and parentheses on `ops`.
    nesting: u64,
}

impl Stacks {
    fn push_nesting(&mut self, op: Op, limits: &ParseLimits) -> Result<()> {
        self.nesting += 1;
        if self.nesting > limits.max_parser_depth {
            return Err(limits.too_deep());
        }
        self.ops.push(op);
        Ok(())
    }

    /// Applies the operators on top that bind at least as tightly as `op` would (all but open
    /// parentheses when `op` is `None`); `None` when operands are missing.
    fn reduce(&mut self, op: Option<Op>) -> Option<()> {
        while let Some(&top) = self.ops.last() {
            let applies = match (top, op) {
                (Op::Group, _) => false,
                (_, None) => true,
                (Op::Not, _) => true,
                (Op::And, Some(Op::And | Op::Or)) => true,
                (Op::Or, Some(Op::Or)) => true,
                _ => false,
            };
            if !applies {
                break;
            }
            self.ops.pop();
            let right = self.operands.pop()?;
            let reduced = match top {
                Op::Not => {
                    self.nesting -= 1;
                    Predicate::Not(Box::new(right))
                }
                Op::And => Predicate::and(self.operands.pop()?, right),
                Op::Or => Predicate::or(self.operands.pop()?, right),
                Op::Group => return None,
            };
            self.operands.push(reduced);
        }
        Some(())
    }
}

/// The predicate `text` spells, when it is of the form read here; `TOO_DEEP_RECURSION` when
/// `NOT` and parentheses nest deeper than `limits` allow.
pub(crate) fn parse(text: &str, limits: &ParseLimits) -> Result<Option<Predicate>> {
    let mut cursor = LexSource::at(text, 0);
    let mut stacks = Stacks {
        operands: Vec::new(),
        ops: Vec::new(),
        nesting: 0,
    };
    loop {
        // An operand: `NOT` and `(` open, a comparison completes one.
        let token = cursor.peek_token();
        if token.is_word(text, "NOT") {
            cursor.next_token();
            stacks.push_nesting(Op::Not, limits)?;
            continue;
        }
        if token.kind == Kind::Punct(Punct::LParen) {
            cursor.next_token();
            stacks.push_nesting(Op::Group, limits)?;
            continue;
        }
        let Some(comparison) = comparison(text, &mut cursor) else {
            return Ok(None);
        };
        stacks.operands.push(comparison);
        // Operators, and closing parentheses that complete a group.
        loop {
            let token = cursor.next_token();
            let op = if token.is_word(text, "AND") {
                Op::And
            } else if token.is_word(text, "OR") {
                Op::Or
            } else if token.kind == Kind::Punct(Punct::RParen) {
                if stacks.reduce(Some(Op::Or)).is_none() || stacks.ops.pop() != Some(Op::Group) {
                    return Ok(None);
                }
                stacks.nesting -= 1;
                continue;
            } else if is_end(token) {
                let complete = stacks.reduce(None).is_some()
                    && stacks.ops.is_empty()
                    && stacks.operands.len() == 1;
                return Ok(stacks.operands.pop().filter(|_| complete));
            } else {
                return Ok(None);
            };
            if stacks.reduce(Some(op)).is_none() {
                return Ok(None);
            }
            stacks.ops.push(op);
            break;
        }
    }
}

/// A comparison's side.
enum Operand {
    Column(String),
    Literal(Literal),
}

/// A column (`a`, `a.b`, `` `a b` ``) or a literal.
fn operand(text: &str, cursor: &mut LexSource<'_>) -> Option<Operand> {
    let token = cursor.peek_token();
    let is_name = match token.kind {
        Kind::QuotedIdent => true,
        Kind::Word => is_bare_identifier(token.text(text)),
        _ => false,
    };
    if !is_name {
        return read_literal(cursor).map(Operand::Literal);
    }
    let mut parts = vec![name_part(text, cursor.next_token())?];
    while cursor.peek_token().kind == Kind::Punct(Punct::Period) {
        cursor.next_token();
        parts.push(name_part(text, cursor.next_token())?);
    }
    Some(Operand::Column(parts.join(".")))
}

fn name_part(text: &str, token: Token) -> Option<String> {
    match token.kind {
        Kind::QuotedIdent => ident_value(text, token),
        Kind::Word if is_bare_identifier(token.text(text)) => Some(token.text(text).to_string()),
        _ => None,
    }
}

fn cmp_op(token: Token) -> Option<CmpOp> {
    Some(match token.kind {
        Kind::Punct(Punct::Eq | Punct::DoubleEq) => CmpOp::Eq,
        Kind::Punct(Punct::NotEq) => CmpOp::NotEq,
        Kind::Punct(Punct::Lt) => CmpOp::Lt,
        Kind::Punct(Punct::LtEq) => CmpOp::LtEq,
        Kind::Punct(Punct::Gt) => CmpOp::Gt,
        Kind::Punct(Punct::GtEq) => CmpOp::GtEq,
        _ => return None,
    })
}

/// `side op side`, `col [NOT] IN (…)`, `col IS [NOT] NULL`, `col [NOT] BETWEEN a AND b`.
fn comparison(text: &str, cursor: &mut LexSource<'_>) -> Option<Predicate> {
    let mut ahead = cursor.clone();
    let left = operand(text, &mut ahead)?;
    let mut token = ahead.next_token();
    if token.is_word(text, "IS") {
        let Operand::Column(column) = left else {
            return None;
        };
        let negated = ahead.peek_token().is_word(text, "NOT");
        if negated {
            ahead.next_token();
        }
        if !ahead.next_token().is_word(text, "NULL") {
            return None;
        }
        *cursor = ahead;
        return Some(Predicate::IsNull { column, negated });
    }
    let negated = token.is_word(text, "NOT");
    if negated {
        token = ahead.next_token();
    }
    let predicate = if token.is_word(text, "IN") {
        let Operand::Column(column) = left else {
            return None;
        };
        in_list(&mut ahead, column, negated)?
    } else if token.is_word(text, "BETWEEN") {
        let Operand::Column(column) = left else {
            return None;
        };
        between(text, &mut ahead, column, negated)?
    } else if negated {
        return None;
    } else {
        let op = cmp_op(token)?;
        match (left, operand(text, &mut ahead)?) {
            (Operand::Column(column), Operand::Literal(value)) => {
                Predicate::Cmp { column, op, value }
            }
            (Operand::Literal(value), Operand::Column(column)) => Predicate::Cmp {
                column,
                op: op.flipped(),
                value,
            },
            _ => return None,
        }
    };
    *cursor = ahead;
    Some(predicate)
}

fn in_list(cursor: &mut LexSource<'_>, column: String, negated: bool) -> Option<Predicate> {
    if cursor.next_token().kind != Kind::Punct(Punct::LParen) {
        return None;
    }
    let mut values = Vec::new();
    loop {
        values.push(read_literal(cursor)?);
        match cursor.next_token().kind {
            Kind::Punct(Punct::Comma) => continue,
            Kind::Punct(Punct::RParen) => break,
            _ => return None,
        }
    }
    Some(Predicate::In {
        column,
        values,
        negated,
    })
}

fn between(
    text: &str,
    cursor: &mut LexSource<'_>,
    column: String,
    negated: bool,
) -> Option<Predicate> {
    let low = read_literal(cursor)?;
    if !cursor.next_token().is_word(text, "AND") {
        return None;
    }
    let high = read_literal(cursor)?;
    let both = Predicate::And(vec![
        Predicate::Cmp {
            column: column.clone(),
            op: CmpOp::GtEq,
            value: low,
        },
        Predicate::Cmp {
            column,
            op: CmpOp::LtEq,
            value: high,
        },
    ]);
    Some(if negated {
        Predicate::Not(Box::new(both))
    } else {
        both
    })
}
