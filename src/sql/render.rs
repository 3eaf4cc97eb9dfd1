//! Canonical text of a run of tokens, for an expression icetrim keeps without parsing it (an
//! argument too long for sqlparser, see [`super::fast`]): comments dropped, one space between
//! tokens except inside brackets, before `,`, and between a function name and its `(`.
//! Printing the text and reading it again gives the same tokens and the same text.

use super::lexer::{Kind, Punct, Token};

/// Words after which `(` opens a group, not a function's arguments.
const OPERATOR_WORDS: &[&str] = &[
    "AND", "OR", "NOT", "IN", "IS", "LIKE", "ILIKE", "BETWEEN", "THEN", "WHEN", "ELSE", "CASE",
    "SELECT", "WHERE", "EXISTS", "ANY", "ALL",
];

/// The canonical text of `tokens` (of `sql`).
pub(crate) fn render_tokens(sql: &str, tokens: impl Iterator<Item = Token>) -> String {
    let mut out = String::new();
    let mut previous: Option<Token> = None;
    for token in tokens.filter(|t| !t.is_trivia()) {
        if let Some(previous) = previous
            && !glued(sql, previous, token)
        {
            out.push(' ');
        }
        out.push_str(token.text(sql));
        previous = Some(token);
    }
    out
}

/// Whether no space goes between `previous` and `token`.
fn glued(sql: &str, previous: Token, token: Token) -> bool {
    let opens = matches!(previous.kind, Kind::Punct(Punct::LParen | Punct::LBracket));
    let closes = matches!(
        token.kind,
        Kind::Punct(Punct::RParen | Punct::RBracket | Punct::Comma)
    );
    let call = token.kind == Kind::Punct(Punct::LParen)
        && (previous.kind == Kind::QuotedIdent
            || (previous.kind == Kind::Word
                && !OPERATOR_WORDS
                    .iter()
                    .any(|w| w.eq_ignore_ascii_case(previous.text(sql)))));
    opens || closes || call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::lexer::Lexer;

    fn render(sql: &str) -> String {
        render_tokens(sql, Lexer::new(sql))
    }

    #[test]
    fn spacing_is_canonical_and_stable() {
        let text = render("now( )+ 1 +/* c */f ( [1,2 ] , x IN( 3 ) ) - - 1");
        assert_eq!(text, "now() + 1 + f([1, 2], x IN (3)) - - 1");
        assert_eq!(render(&text), text);
    }
}
