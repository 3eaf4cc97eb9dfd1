//! [`Literal`]: a constant as ClickHouse understands one. A leaf shared by the SQL front end
//! (which parses and prints literals: `sql::ast`) and the settings (which take their values from
//! literals), so neither imports the other.

/// A constant as ClickHouse understands one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    /// A number as written, with a leading `-` when negative (`42`, `-1`, `2.5`, `1e3`).
    Number(String),
    String(String),
    Bool(bool),
    Null,
    Array(Vec<Literal>),
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
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
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
}
