//! Reading a literal (number, `-`number, string, `true`/`false`, `NULL`, array, tuple, and any of
//! these in parentheses) from a token stream, with an explicit stack: nesting costs no recursion,
//! and a list costs what its [`Literal`]s cost (integers 8 bytes, see [`LiteralList`]).
//!
//! Two streams feed it: icetrim's [`Lexer`] over the statement text ([`LexSource`], for the
//! arguments of `ALTER TABLE … EXECUTE`, which may hold a million ids) and sqlparser's parser
//! (`parser::SqlparserSource`, for the statements sqlparser tokenizes). The literal is the one
//! sqlparser's tree would give (`parser::literal_of`), except that parentheses around one value
//! are that value, as in ClickHouse (`(5)` is `5`, `((1, 2))` the tuple).

use std::borrow::Cow;
use std::cell::Cell;

use sqlparser::dialect::ClickHouseDialect;
use sqlparser::tokenizer::{Token as SqlToken, Tokenizer};

use super::lexer::{Kind, Lexer, Punct, Token};
use crate::literal::{Literal, LiteralList};

/// A token as the literal reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A number as written (no sign).
    Number(&'a str),
    /// A string's value (escapes resolved).
    String(Cow<'a, str>),
    /// An unquoted word.
    Word(&'a str),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Minus,
    /// The end of the text.
    End,
    /// Anything else.
    Other,
}

/// A token stream the literal reader consumes.
pub(crate) trait LiteralSource {
    /// The next token, not consumed.
    fn peek(&mut self) -> Tok<'_>;
    /// Consumes the next token.
    fn advance(&mut self);
}

/// An open bracket and what it holds so far.
enum Frame {
    Square(LiteralList),
    Paren { items: Vec<Literal>, commas: bool },
}

/// Whether the value just read is followed by a token that ends a literal here: `,`, `)` or the
/// end of the text (anything else continues an expression).
pub(crate) fn ends_literal(tok: &Tok<'_>) -> bool {
    matches!(tok, Tok::Comma | Tok::RParen | Tok::End)
}

/// What the next tokens started.
enum Step {
    /// A complete value.
    Value(Literal),
    /// A number, already appended to the innermost array.
    Pushed,
    /// A bracket, now open.
    Opened,
}

/// Reads one literal; `None` (with the stream somewhere inside it) when the tokens are not one.
pub(crate) fn read_literal(src: &mut impl LiteralSource) -> Option<Literal> {
    let mut stack: Vec<Frame> = Vec::new();
    loop {
        let mut value = match read_step(src, &mut stack)? {
            Step::Opened => continue,
            Step::Value(value) => Some(value),
            Step::Pushed => None,
        };
        // A value is complete: add it to the open bracket, closing brackets as they come.
        loop {
            let Some(frame) = stack.last_mut() else {
                return value;
            };
            let closes = match (src.peek(), &*frame) {
                (Tok::Comma, _) => false,
                (Tok::RBracket, Frame::Square(_)) | (Tok::RParen, Frame::Paren { .. }) => true,
                _ => return None,
            };
            src.advance();
            match frame {
                Frame::Square(items) => {
                    if let Some(value) = value.take() {
                        items.push(value);
                    }
                }
                Frame::Paren { items, commas } => {
                    items.extend(value.take());
                    *commas |= !closes;
                }
            }
            if !closes {
                break;
            }
            value = Some(match stack.pop()? {
                Frame::Square(items) => Literal::Array(items),
                Frame::Paren { mut items, commas } => match (items.len(), commas) {
                    (1, false) => items.pop()?,
                    (n, _) if n > 1 => Literal::Tuple(items),
                    _ => return None,
                },
            });
        }
    }
}

/// How the next token starts a literal.
enum Start {
    /// A scalar or a number appended to the innermost array.
    Step(Step),
    Minus,
    LBracket,
    LParen,
}

/// Reads a scalar or opens a bracket (an empty `[]` is a value at once); `None` when the next
/// tokens are no literal.
fn read_step(src: &mut impl LiteralSource, stack: &mut Vec<Frame>) -> Option<Step> {
    let start = match src.peek() {
        Tok::Number(text) => Start::Step(match stack.last_mut() {
            Some(Frame::Square(items)) => {
                items.push_number(text);
                Step::Pushed
            }
            _ => Step::Value(Literal::Number(text.to_string())),
        }),
        Tok::String(text) => Start::Step(Step::Value(Literal::String(text.into_owned()))),
        Tok::Word(word) => Start::Step(Step::Value(match word.to_ascii_lowercase().as_str() {
            "true" => Literal::Bool(true),
            "false" => Literal::Bool(false),
            "null" => Literal::Null,
            _ => return None,
        })),
        Tok::Minus => Start::Minus,
        Tok::LBracket => Start::LBracket,
        Tok::LParen => Start::LParen,
        _ => return None,
    };
    src.advance();
    match start {
        Start::Step(step) => Some(step),
        Start::Minus => {
            let negative = match src.peek() {
                Tok::Number(text) => format!("-{text}"),
                _ => return None,
            };
            src.advance();
            Some(Step::Value(Literal::Number(negative)))
        }
        Start::LBracket => {
            if src.peek() == Tok::RBracket {
                src.advance();
                return Some(Step::Value(Literal::Array(LiteralList::new())));
            }
            stack.push(Frame::Square(LiteralList::new()));
            Some(Step::Opened)
        }
        Start::LParen => {
            stack.push(Frame::Paren {
                items: Vec::new(),
                commas: false,
            });
            Some(Step::Opened)
        }
    }
}

/// [`LiteralSource`] over icetrim's lexer: significant tokens, the next one read once.
#[derive(Clone)]
pub(crate) struct LexSource<'a> {
    sql: &'a str,
    lexer: Lexer<'a>,
    /// The next significant token, once peeked (the lexer is then past it).
    peeked: Cell<Option<Token>>,
}

impl<'a> LexSource<'a> {
    /// Reads `sql` from byte `pos` (a token boundary).
    pub(crate) fn at(sql: &'a str, pos: usize) -> Self {
        LexSource {
            sql,
            lexer: Lexer::at(sql, pos),
            peeked: Cell::new(None),
        }
    }

    /// The next significant token, not consumed.
    pub(crate) fn peek_token(&self) -> Token {
        match self.peeked.get() {
            Some(token) => token,
            None => {
                let mut lexer = self.lexer.clone();
                let token = lexer.next_significant();
                self.peeked.set(Some(token));
                token
            }
        }
    }

    /// Consumes and returns the next significant token.
    pub(crate) fn next_token(&mut self) -> Token {
        match self.peeked.take() {
            Some(token) => {
                self.lexer = Lexer::at(self.sql, token.end);
                token
            }
            None => self.lexer.next_significant(),
        }
    }
}

impl LiteralSource for LexSource<'_> {
    fn peek(&mut self) -> Tok<'_> {
        let token = self.peek_token();
        let sql = self.sql;
        let text = token.text(sql);
        match token.kind {
            Kind::Number if text.bytes().all(|b| b.is_ascii_digit()) => Tok::Number(text),
            Kind::Number => match sqlparser_token(text) {
                Some(SqlToken::Number(_, _)) => Tok::Number(text),
                _ => Tok::Other,
            },
            Kind::String => string_value(text).map_or(Tok::Other, Tok::String),
            Kind::Word => Tok::Word(text),
            Kind::Punct(Punct::LParen) => Tok::LParen,
            Kind::Punct(Punct::RParen) => Tok::RParen,
            Kind::Punct(Punct::LBracket) => Tok::LBracket,
            Kind::Punct(Punct::RBracket) => Tok::RBracket,
            Kind::Punct(Punct::Comma) => Tok::Comma,
            Kind::Punct(Punct::Minus) => Tok::Minus,
            Kind::Whitespace if token.start == token.end => Tok::End,
            _ => Tok::Other,
        }
    }

    fn advance(&mut self) {
        self.next_token();
    }
}

/// The one token sqlparser reads from `text`, if it reads exactly one.
fn sqlparser_token(text: &str) -> Option<SqlToken> {
    let mut tokens = Tokenizer::new(&ClickHouseDialect {}, text)
        .tokenize()
        .ok()?;
    match tokens.len() {
        1 => tokens.pop(),
        _ => None,
    }
}

/// The value of the string token `text` (quotes included), as sqlparser reads it.
pub(crate) fn string_value(text: &str) -> Option<Cow<'_, str>> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    if !inner.contains(['\\', '\'']) {
        return Some(Cow::Borrowed(inner));
    }
    match sqlparser_token(text)? {
        SqlToken::SingleQuotedString(value) => Some(Cow::Owned(value)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<(Literal, bool)> {
        let mut source = LexSource::at(text, 0);
        let literal = read_literal(&mut source)?;
        let whole = source.peek() == Tok::End;
        Some((literal, whole))
    }

    fn number(text: &str) -> Literal {
        Literal::Number(text.to_string())
    }

    #[test]
    fn reads_every_literal_form() {
        let (literal, whole) =
            read("[1, -2, [3, 'a''b'], (4, 'c\\'d'), (5), [], TRUE, null]").unwrap();
        assert!(whole);
        assert_eq!(
            literal,
            Literal::Array(
                vec![
                    number("1"),
                    number("-2"),
                    Literal::Array(vec![number("3"), Literal::String("a'b".into())].into()),
                    Literal::Tuple(vec![number("4"), Literal::String("c'd".into())]),
                    number("5"),
                    Literal::Array(LiteralList::new()),
                    Literal::Bool(true),
                    Literal::Null,
                ]
                .into()
            )
        );
        assert_eq!(
            read("((1, 2))"),
            Some((Literal::Tuple(vec![number("1"), number("2")]), true))
        );
        assert_eq!(read("- 7"), Some((number("-7"), true)));
        assert_eq!(read("1_000"), Some((number("1_000"), true)));
        assert_eq!(
            read("1 + 1"),
            Some((number("1"), false)),
            "a literal, then more"
        );
    }

    #[test]
    fn refuses_what_is_no_literal() {
        for text in [
            "(1,)", "[1,]", "()", "- -1", "-(1)", "now()", "[1, x]", "`a`", "0x1F", "+1",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    #[test]
    fn nesting_costs_no_recursion() {
        // Reading, printing, comparing and dropping a literal nested as deep as the deepest
        // max_parser_depth allows, on the stack of a tokio worker.
        let depth = crate::sql::MAX_PARSER_DEPTH_CEILING as usize;
        let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let outcome = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let mut source = LexSource::at(&text, 0);
                let literal = read_literal(&mut source).expect("a literal");
                assert_eq!(literal.to_string(), text);
                assert_eq!(literal.clone(), literal);
                let tuple = format!("{}1, 2{}", "(".repeat(depth), ")".repeat(depth));
                let mut source = LexSource::at(&tuple, 0);
                let literal = read_literal(&mut source).expect("a tuple");
                assert_eq!(literal.to_string(), format!("(1, 2)"));
            })
            .unwrap()
            .join();
        assert!(outcome.is_ok());
    }
}
