//! [`Literal`]: a constant as ClickHouse understands one. A leaf shared by the SQL front end
//! (which parses and prints literals: `sql::ast`) and the settings (which take their values from
//! literals), so neither imports the other.
//!
//! An array literal is a [`LiteralList`], which holds a list of integers written in canonical
//! form (`-?[1-9][0-9]*` or `0`, within `Int64`: `snapshot_ids = [...]`) as 8 bytes an element
//! instead of a `Literal` and its text, so a million ids fit in 8 MB.

use std::borrow::Cow;
use std::fmt;

/// A constant as ClickHouse understands one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Literal {
    /// A number as written, with a leading `-` when negative (`42`, `-1`, `2.5`, `1e3`).
    Number(String),
    String(String),
    Bool(bool),
    Null,
    Array(LiteralList),
    Tuple(Vec<Literal>),
}

impl Literal {
    /// The ClickHouse type name of the literal, as ClickHouse's argument errors print it:
    /// `UInt64` (non-negative integer that fits), `Int64` (negative that fits), `Float64`,
    /// `String`, `Bool`, `Null`, `Array`, `Tuple`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Literal::Number(_) => match self.as_integer() {
                Some(v) if v >= 0 && v <= i128::from(u64::MAX) => "UInt64",
                Some(v) if v < 0 && v >= i128::from(i64::MIN) => "Int64",
                _ => "Float64",
            },
            Literal::String(_) => "String",
            Literal::Bool(_) => "Bool",
            Literal::Null => "Null",
            Literal::Array(_) => "Array",
            Literal::Tuple(_) => "Tuple",
        }
    }

    /// The value of an integer number literal (`UInt64` or `Int64` in ClickHouse terms); `None` for
    /// anything else, including integers outside both ranges.
    pub fn as_integer(&self) -> Option<i128> {
        let Literal::Number(text) = self else {
            return None;
        };
        integer_of(text)
    }
}

/// The value of the integer number `text` (`UInt64` or `Int64` range, `_` separators allowed).
fn integer_of(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i128 = digits.parse().ok()?;
    let value = if negative { -value } else { value };
    let fits = if negative {
        value >= i128::from(i64::MIN)
    } else {
        value <= i128::from(u64::MAX)
    };
    fits.then_some(value)
}

/// The `Int64` that `text` spells in canonical form (no sign but `-`, no leading zeros, no `_`,
/// not `-0`), which printing the value gives back exactly.
fn canonical_i64(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    if !canonical {
        return None;
    }
    text.parse().ok()
}

/// The elements of an array literal.
///
/// Equality, `Debug` and iteration see a list of [`Literal`]s whatever the storage.
#[derive(Clone, Default)]
pub struct LiteralList(Items);

#[derive(Clone)]
enum Items {
    /// Every element is a canonical `Int64` number.
    Integers(Vec<i64>),
    Any(Vec<Literal>),
}

impl Default for Items {
    fn default() -> Self {
        Items::Integers(Vec::new())
    }
}

impl LiteralList {
    /// An empty list.
    pub fn new() -> Self {
        LiteralList::default()
    }

    /// Appends `literal`.
    pub fn push(&mut self, literal: Literal) {
        match &mut self.0 {
            Items::Integers(values) => {
                if let Literal::Number(text) = &literal
                    && let Some(value) = canonical_i64(text)
                {
                    values.push(value);
                    return;
                }
                let mut literals: Vec<Literal> = values
                    .iter()
                    .map(|v| Literal::Number(v.to_string()))
                    .collect();
                literals.push(literal);
                self.0 = Items::Any(literals);
            }
            Items::Any(literals) => literals.push(literal),
        }
    }

    /// Appends the number `text` (as written), without allocating it when it is a canonical
    /// `Int64`.
    pub fn push_number(&mut self, text: &str) {
        if let Items::Integers(values) = &mut self.0
            && let Some(value) = canonical_i64(text)
        {
            values.push(value);
            return;
        }
        self.push(Literal::Number(text.to_string()));
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Items::Integers(values) => values.len(),
            Items::Any(literals) => literals.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements in order (integers are given as `Literal::Number`).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Cow<'_, Literal>> + '_ {
        let (integers, literals): (&[i64], &[Literal]) = match &self.0 {
            Items::Integers(values) => (values, &[]),
            Items::Any(literals) => (&[], literals),
        };
        let integers = integers
            .iter()
            .map(|v| Cow::Owned(Literal::Number(v.to_string())));
        let literals = literals.iter().map(Cow::Borrowed);
        ListIter {
            inner: integers.chain(literals),
            len: self.len(),
        }
    }

    /// The elements as integers (`as_integer`), without building a `Literal` for each when they
    /// are stored as integers; `None` for an element that is not an integer.
    pub fn integers(&self) -> impl Iterator<Item = Option<i128>> + '_ {
        let (integers, literals): (&[i64], &[Literal]) = match &self.0 {
            Items::Integers(values) => (values, &[]),
            Items::Any(literals) => (&[], literals),
        };
        integers
            .iter()
            .map(|v| Some(i128::from(*v)))
            .chain(literals.iter().map(Literal::as_integer))
    }
}

/// An iterator that knows its length.
struct ListIter<I> {
    inner: I,
    len: usize,
}

impl<'a, I: Iterator<Item = Cow<'a, Literal>>> Iterator for ListIter<I> {
    type Item = Cow<'a, Literal>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next()?;
        self.len -= 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl<'a, I: Iterator<Item = Cow<'a, Literal>>> ExactSizeIterator for ListIter<I> {}

impl From<Vec<Literal>> for LiteralList {
    fn from(literals: Vec<Literal>) -> Self {
        literals.into_iter().collect()
    }
}

impl FromIterator<Literal> for LiteralList {
    fn from_iter<T: IntoIterator<Item = Literal>>(iter: T) -> Self {
        let mut list = LiteralList::new();
        for literal in iter {
            list.push(literal);
        }
        list
    }
}

impl PartialEq for LiteralList {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Items::Integers(a), Items::Integers(b)) => a == b,
            (Items::Any(a), Items::Any(b)) => a == b,
            _ => self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b),
        }
    }
}

impl Eq for LiteralList {}

impl fmt::Debug for LiteralList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Literal {
        Literal::Number(text.to_string())
    }

    #[test]
    fn integers_are_stored_compactly_and_read_back_as_written() {
        let mut list = LiteralList::new();
        for text in ["0", "-9223372036854775808", "9223372036854775807", "42"] {
            list.push_number(text);
        }
        assert!(matches!(list.0, Items::Integers(_)));
        let texts: Vec<String> = list
            .iter()
            .map(|l| match l.as_ref() {
                Literal::Number(t) => t.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            ["0", "-9223372036854775808", "9223372036854775807", "42"]
        );
        assert_eq!(list.len(), 4);
    }

    #[test]
    fn other_spellings_keep_their_text_and_the_order() {
        for odd in ["007", "-0", "1_000", "1.5", "9223372036854775808", "1e3"] {
            let list: LiteralList = vec![number("1"), number(odd), number("2")].into();
            assert!(matches!(list.0, Items::Any(_)), "{odd}");
            let again: Vec<Literal> = list.iter().map(Cow::into_owned).collect();
            assert_eq!(again, vec![number("1"), number(odd), number("2")]);
        }
        let mixed: LiteralList = vec![number("1"), Literal::String("x".into())].into();
        assert_eq!(
            mixed.integers().collect::<Vec<_>>(),
            vec![Some(1), None],
            "integers() reads the general storage too"
        );
    }

    #[test]
    fn equality_ignores_the_storage() {
        let compact: LiteralList = vec![number("1"), number("2")].into();
        let mut general = LiteralList(Items::Any(vec![number("1"), number("2")]));
        assert_eq!(compact, general);
        general.push(number("3"));
        assert_ne!(compact, general);
        assert_eq!(format!("{compact:?}"), r#"[Number("1"), Number("2")]"#);
    }
}
