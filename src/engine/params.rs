//! Query parameters: `{name:Type}` placeholders in a statement's text, replaced by typed literals
//! before parsing, as ClickHouse does with `--param_<name>=<value>` and `SET param_<name> = …`.
//!
//! Placeholders are found outside string literals, quoted identifiers and comments (`-- …`, `# …`,
//! nested `/* … */`). The value (text)
//! becomes a literal of `Type`:
//!
//! | Type                                   | literal                                                  |
//! |----------------------------------------|----------------------------------------------------------|
//! | `String`, `Date`, `Date32`, `DateTime`, `DateTime64` | a quoted, escaped string (timestamps are checked where they are used) |
//! | `UInt8`…`UInt64`, `Int8`…`Int64`       | the integer, which must parse completely and fit the type |
//! | `Float32`, `Float64`                   | the number, which must parse completely and be finite     |
//! | `Bool`                                 | `true` / `false` (from `true`, `false`, `1`, `0`)         |
//!
//! Errors as ClickHouse names them: a placeholder without a value is `UNKNOWN_QUERY_PARAMETER`
//! ("Substitution \`n\` is not set"), a value that does not parse as its type is
//! `BAD_QUERY_PARAMETER`, a type outside the table is `UNKNOWN_TYPE`. Deliberate difference: an
//! integer out of its type's range is refused (ClickHouse wraps it: `300` as `UInt8` is `44`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::{Error, ErrorKind, Result};
use crate::sql::Literal;

/// The prefix of a setting that sets a query parameter (`SET param_n = 5`).
pub const PARAM_SETTING_PREFIX: &str = "param_";

/// `sql` with every `{name:Type}` placeholder outside strings and comments replaced by the typed
/// literal of `params[name]`.
pub fn substitute<'a>(sql: &'a str, params: &BTreeMap<String, String>) -> Result<Cow<'a, str>> {
    if !sql.contains('{') {
        return Ok(Cow::Borrowed(sql));
    }
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        let skipped = skip_quoted_or_comment(rest);
        if skipped > 0 {
            let (head, tail) = rest.split_at(skipped);
            out.push_str(head);
            rest = tail;
            continue;
        }
        if let Some((name, type_name, len)) = placeholder(rest).filter(|_| c == '{') {
            let value = params.get(name).ok_or_else(|| {
                Error::new(
                    ErrorKind::UnknownQueryParameter,
                    format!("Substitution `{name}` is not set"),
                )
            })?;
            out.push_str(&typed_literal(name, type_name, value)?);
            rest = rest.get(len..).unwrap_or_default();
            continue;
        }
        out.push(c);
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    Ok(Cow::Owned(out))
}

/// The length of the string literal, quoted identifier or comment `text` starts with (0: none).
fn skip_quoted_or_comment(text: &str) -> usize {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(&q @ (b'\'' | b'"' | b'`')) => {
            let mut i = 1;
            while let Some(&b) = bytes.get(i) {
                if b == b'\\' {
                    i += 2;
                    continue;
                }
                if b == q {
                    if bytes.get(i + 1) == Some(&q) {
                        i += 2;
                        continue;
                    }
                    return i + 1;
                }
                i += 1;
            }
            text.len()
        }
        Some(b'-') if bytes.get(1) == Some(&b'-') => text.find('\n').unwrap_or(text.len()),
        Some(b'#') => text.find('\n').unwrap_or(text.len()),
        Some(b'/') if bytes.get(1) == Some(&b'*') => block_comment_len(bytes),
        _ => 0,
    }
}

/// The length of the (possibly nested) `/* … */` comment `bytes` starts with.
fn block_comment_len(bytes: &[u8]) -> usize {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match (bytes.get(i), bytes.get(i + 1)) {
            (Some(b'/'), Some(b'*')) => {
                depth += 1;
                i += 2;
            }
            (Some(b'*'), Some(b'/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// `{ name : Type }` at the start of `text`: the name, the type and the placeholder's length.
fn placeholder(text: &str) -> Option<(&str, &str, usize)> {
    let close = text.find('}')?;
    let inner = text.get(1..close)?;
    let (name, type_name) = inner.split_once(':')?;
    let (name, type_name) = (name.trim(), type_name.trim());
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let identifier = starts_well && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier || type_name.is_empty() || type_name.contains('{') {
        return None;
    }
    Some((name, type_name, close + 1))
}

/// `value` as a literal of `type_name`, for parameter `name`.
fn typed_literal(name: &str, type_name: &str, value: &str) -> Result<String> {
    let bad = || {
        Error::new(
            ErrorKind::BadQueryParameter,
            format!("Value {value} cannot be parsed as {type_name} for query parameter '{name}'"),
        )
    };
    let integer = |min: i128, max: i128| -> Result<String> {
        match value.parse::<i128>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v.to_string()),
            _ => Err(bad()),
        }
    };
    let base = type_name.split('(').next().unwrap_or(type_name).trim();
    match base {
        "String" | "Date" | "Date32" | "DateTime" | "DateTime64" => {
            Ok(Literal::String(value.to_string()).to_string())
        }
        "UInt8" => integer(0, u8::MAX.into()),
        "UInt16" => integer(0, u16::MAX.into()),
        "UInt32" => integer(0, u32::MAX.into()),
        "UInt64" => integer(0, u64::MAX.into()),
        "Int8" => integer(i8::MIN.into(), i8::MAX.into()),
        "Int16" => integer(i16::MIN.into(), i16::MAX.into()),
        "Int32" => integer(i32::MIN.into(), i32::MAX.into()),
        "Int64" => integer(i64::MIN.into(), i64::MAX.into()),
        "Float32" | "Float64" => match value.parse::<f64>() {
            Ok(v) if v.is_finite() && !value.contains(['i', 'I', 'n', 'N']) => {
                Ok(value.to_string())
            }
            _ => Err(bad()),
        },
        "Bool" => match value.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok("true".to_string()),
            "false" | "0" => Ok("false".to_string()),
            _ => Err(bad()),
        },
        _ => Err(Error::new(
            ErrorKind::UnknownType,
            format!("Unknown data type family: {base} (query parameter '{name}')"),
        )),
    }
}

/// The text of a `SET param_<name> = <literal>` value: a string as is, anything else as written.
pub fn setting_value_text(value: &Literal) -> String {
    match value {
        Literal::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_replaced_outside_strings() -> crate::Result<()> {
        use crate::engine::params::substitute;
        use std::collections::BTreeMap;

        let params = BTreeMap::from([
            ("n".to_string(), "3".to_string()),
            ("s".to_string(), "it's".to_string()),
        ]);
        assert_eq!(
            substitute("SELECT {n:UInt64}, {s:String}, '{n:UInt64}'", &params)?,
            r"SELECT 3, 'it\'s', '{n:UInt64}'"
        );
        let missing = substitute("SELECT {m:Int64}", &params).unwrap_err();
        assert_eq!(missing.code(), 456);
        Ok(())
    }

    #[test]
    fn a_set_param_value_is_its_text() {
        use crate::engine::params::setting_value_text;
        use crate::sql::Literal;
        assert_eq!(setting_value_text(&Literal::String("a'b".into())), "a'b");
        assert_eq!(setting_value_text(&Literal::Number("-4".into())), "-4");
    }

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn typed_literals() {
        let p = params(&[
            ("s", r"a'b\c"),
            ("n", "42"),
            ("f", "1.5"),
            ("b", "1"),
            ("neg", "-7"),
        ]);
        let got = substitute(
            "x({s:String}, { n : UInt64 }, {f:Float64}, {b:Bool}, {neg:Int8}, {s:DateTime})",
            &p,
        )
        .unwrap();
        assert_eq!(got, r"x('a\'b\\c', 42, 1.5, true, -7, 'a\'b\\c')");
    }

    #[test]
    fn placeholders_inside_strings_comments_and_identifiers_stay() {
        let p = params(&[("n", "1")]);
        for text in [
            "SELECT '{n:UInt8}'",
            "SELECT 'it''s {n:UInt8}'",
            r"SELECT 'a\'{n:UInt8}'",
            "SELECT `{n:UInt8}`",
            "SELECT 1 -- {n:UInt8}\n",
            "SELECT /* {n:UInt8} */ 1",
            "SELECT /* a /* {n:UInt8} */ {n:UInt8} */ 1",
            "SELECT 1 # {n:UInt8}",
            "SELECT {not a placeholder}",
        ] {
            assert_eq!(substitute(text, &p).unwrap(), text);
        }
        assert_eq!(substitute("-- c\n{n:UInt8}", &p).unwrap(), "-- c\n1");
    }

    #[test]
    fn errors_are_clickhouse_errors() {
        let p = params(&[("n", "-1"), ("big", "300"), ("x", "abc"), ("inf", "inf")]);
        let err = |sql: &str| substitute(sql, &p).unwrap_err();
        assert_eq!(err("{m:UInt64}").kind(), ErrorKind::UnknownQueryParameter);
        assert_eq!(err("{m:UInt64}").message(), "Substitution `m` is not set");
        let e = err("{n:UInt64}");
        assert_eq!(e.kind(), ErrorKind::BadQueryParameter);
        assert_eq!(
            e.message(),
            "Value -1 cannot be parsed as UInt64 for query parameter 'n'"
        );
        assert_eq!(err("{big:UInt8}").kind(), ErrorKind::BadQueryParameter);
        assert_eq!(err("{x:Int64}").kind(), ErrorKind::BadQueryParameter);
        assert_eq!(err("{inf:Float64}").kind(), ErrorKind::BadQueryParameter);
        assert_eq!(err("{x:Bool}").kind(), ErrorKind::BadQueryParameter);
        assert_eq!(err("{n:Nope}").kind(), ErrorKind::UnknownType);
    }

    #[test]
    fn multibyte_text_survives() {
        let p = params(&[("s", "é")]);
        assert_eq!(substitute("'ü' {s:String} ü", &p).unwrap(), "'ü' 'é' ü");
    }
}
