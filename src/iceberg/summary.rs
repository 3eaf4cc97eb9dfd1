//! A snapshot's `summary`: string properties, read in key order. A table holds one per snapshot
//! (100,000 and more), so it is kept small in one of two forms:
//!
//! - the summary's own JSON text as the metadata file wrote it, a slice of the bytes the table's
//!   metadata already holds, read on each access. Only a compact object of string values without
//!   escapes (`{"k":"v",...}`, what Java, pyiceberg and icetrim write) is held so: every key and
//!   value is then a plain slice of the text, and nothing is allocated per snapshot;
//! - otherwise packed: keys and values back to back in key order, with their end offsets (as a
//!   `BTreeMap` of `String`s each summary took about 1 KB; packed about a quarter of that).

use std::collections::BTreeMap;

use bytes::Bytes;

/// A snapshot's `summary` (`operation` included).
#[derive(Clone, Default)]
pub struct Summary {
    form: Form,
}

#[derive(Clone)]
enum Form {
    /// Keys and values back to back in key order; `ends` holds the end of each key and each value
    /// in `text`: `[key0, value0, key1, value1, ...]`.
    Packed { text: Box<str>, ends: Box<[u32]> },
    /// A compact JSON object of string values with no `\` in it (checked when made). Its keys are
    /// distinct (it is what serde_json wrote for a parsed map).
    Json(Bytes),
}

impl Default for Form {
    fn default() -> Self {
        Form::Packed {
            text: Box::default(),
            ends: Box::default(),
        }
    }
}

impl Summary {
    /// A summary read from `json`, the compact text serde_json writes for a map of strings: held as
    /// that text when no key or value needs an escape, `None` otherwise (the caller packs it).
    pub(crate) fn from_compact_json(json: Bytes) -> Option<Summary> {
        let text = std::str::from_utf8(&json).ok()?;
        if text.contains('\\') {
            return None;
        }
        let mut pairs = JsonPairs::of(text)?;
        for _ in pairs.by_ref() {}
        (pairs.rest == "}").then_some(Summary {
            form: Form::Json(json),
        })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        match &self.form {
            Form::Packed { text, ends } => packed_pairs(text, ends)
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v),
            Form::Json(json) => json_pairs(json).find(|(k, _)| *k == key).map(|(_, v)| v),
        }
    }

    /// The properties in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        match &self.form {
            Form::Packed { text, ends } => Pairs::Packed(packed_pairs(text, ends)),
            Form::Json(json) => {
                let mut pairs: Vec<(&str, &str)> = json_pairs(json).collect();
                pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
                Pairs::Sorted(pairs.into_iter())
            }
        }
    }

    /// The JSON text the summary reads from, when it is held so.
    #[cfg(test)]
    pub(crate) fn held_text(&self) -> Option<&Bytes> {
        match &self.form {
            Form::Json(json) => Some(json),
            Form::Packed { .. } => None,
        }
    }

    pub fn len(&self) -> usize {
        match &self.form {
            Form::Packed { ends, .. } => ends.len() / 2,
            Form::Json(json) => json_pairs(json).count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As a map.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

/// The pairs of a packed summary, in key order.
fn packed_pairs<'a>(text: &'a str, ends: &'a [u32]) -> impl Iterator<Item = (&'a str, &'a str)> {
    ends.chunks_exact(2).scan(0usize, move |start, pair| {
        let (key_end, value_end) = (pair[0] as usize, pair[1] as usize);
        let key = text.get(*start..key_end).unwrap_or("");
        let value = text.get(key_end..value_end).unwrap_or("");
        *start = value_end;
        Some((key, value))
    })
}

/// The pairs of a JSON-form summary, in the text's order (its bytes were checked to be UTF-8
/// when the summary was made; were they not, it reads as empty).
fn json_pairs(json: &Bytes) -> JsonPairs<'_> {
    std::str::from_utf8(json)
        .ok()
        .and_then(JsonPairs::of)
        .unwrap_or(JsonPairs { rest: "" })
}

/// Reads `"key":"value"` pairs of a compact object without escapes; stops at the first thing that
/// is not one, leaving it in `rest` (`}` after the last pair of a well-formed object).
struct JsonPairs<'a> {
    rest: &'a str,
}

impl<'a> JsonPairs<'a> {
    fn of(object: &'a str) -> Option<Self> {
        Some(JsonPairs {
            rest: object.strip_prefix('{')?,
        })
    }
}

impl<'a> Iterator for JsonPairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let after_quote = self.rest.strip_prefix('"')?;
        let (key, after_key) = after_quote.split_once('"')?;
        let (value, after_value) = after_key.strip_prefix(":\"")?.split_once('"')?;
        self.rest = match after_value.strip_prefix(',') {
            Some(next) if next.starts_with('"') => next,
            Some(_) => return None,
            None => after_value,
        };
        Some((key, value))
    }
}

/// Either form's pairs, in key order.
enum Pairs<'a, P> {
    Packed(P),
    Sorted(std::vec::IntoIter<(&'a str, &'a str)>),
}

impl<'a, P: Iterator<Item = (&'a str, &'a str)>> Iterator for Pairs<'a, P> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Pairs::Packed(pairs) => pairs.next(),
            Pairs::Sorted(pairs) => pairs.next(),
        }
    }
}

impl PartialEq for Summary {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Summary {}

impl From<BTreeMap<String, String>> for Summary {
    fn from(map: BTreeMap<String, String>) -> Self {
        Summary::from_iter(map)
    }
}

/// Later values of a repeated key win, as in a map; a summary longer than 4 GiB is cut short.
impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Summary {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(items: I) -> Self {
        let sorted: BTreeMap<String, String> = items
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
            .collect();
        let mut text = String::with_capacity(sorted.iter().map(|(k, v)| k.len() + v.len()).sum());
        let mut ends = Vec::with_capacity(sorted.len() * 2);
        for (k, v) in &sorted {
            let (Ok(key_end), Ok(value_end)) = (
                u32::try_from(text.len() + k.len()),
                u32::try_from(text.len() + k.len() + v.len()),
            ) else {
                break;
            };
            text.push_str(k);
            text.push_str(v);
            ends.extend([key_end, value_end]);
        }
        Summary {
            form: Form::Packed {
                text: text.into_boxed_str(),
                ends: ends.into_boxed_slice(),
            },
        }
    }
}

impl std::fmt::Debug for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json(text: &str) -> Option<Summary> {
        Summary::from_compact_json(Bytes::copy_from_slice(text.as_bytes()))
    }

    #[test]
    fn summary_keeps_key_order_and_values() {
        let s: Summary = [
            ("total", "3"),
            ("operation", "append"),
            ("", ""),
            ("é", "ü\0"),
        ]
        .into_iter()
        .collect();
        assert_eq!(s.len(), 4);
        assert_eq!(s.get("operation"), Some("append"));
        assert_eq!(s.get(""), Some(""));
        assert_eq!(s.get("é"), Some("ü\0"));
        assert_eq!(s.get("missing"), None);
        let keys: Vec<&str> = s.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["", "operation", "total", "é"]);
        assert_eq!(Summary::from(s.to_map()), s);
    }

    #[test]
    fn summary_repeated_keys_keep_the_last_value() {
        let s: Summary = [("a", "1"), ("a", "2")].into_iter().collect();
        assert_eq!(s.to_map(), BTreeMap::from([("a".into(), "2".into())]));
        assert!(Summary::default().is_empty());
        assert_eq!(format!("{s:?}"), r#"{"a": "2"}"#);
    }

    #[test]
    fn a_compact_object_of_plain_strings_is_held_as_its_text() {
        let s = json(r#"{"operation":"append","added-records":"3","":"","é":"ü"}"#).unwrap();
        assert!(matches!(s.form, Form::Json(_)));
        assert_eq!(s.len(), 4);
        assert_eq!(s.get("operation"), Some("append"));
        assert_eq!(s.get("é"), Some("ü"));
        assert_eq!(s.get(""), Some(""));
        assert_eq!(s.get("added"), None);
        let keys: Vec<&str> = s.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["", "added-records", "operation", "é"]);
        let packed = Summary::from(s.to_map());
        assert_eq!(s, packed);
        assert_eq!(format!("{s:?}"), format!("{packed:?}"));
        assert!(json("{}").unwrap().is_empty());
    }

    #[test]
    fn anything_else_is_left_to_be_packed() {
        for text in [
            r#"{"a":"x\"y"}"#,
            r#"{"a":"x\\y"}"#,
            r#"{"a":1}"#,
            r#"{"a":true}"#,
            r#"{"a":null}"#,
            r#"{"a": "b"}"#,
            r#"{"a":"b",}"#,
            r#"{"a":"b""#,
            r#"{"a":"b"}x"#,
            r#"{"a":{"b":"c"}}"#,
            r#"["a","b"]"#,
            r#"{"a""#,
            "",
            "{",
        ] {
            assert!(json(text).is_none(), "{text}");
        }
        assert!(Summary::from_compact_json(Bytes::from_static(b"{\"a\":\"\xff\"}")).is_none());
    }

    proptest! {
        /// Any map of strings: the compact JSON serde_json writes is either held as text (and then
        /// reads exactly as the packed form of the map) or refused because it has escapes.
        #[test]
        fn the_text_form_reads_as_the_map(
            map in prop::collection::btree_map(".{0,6}", ".{0,6}", 0..8),
        ) {
            let text = serde_json::to_string(&map).unwrap();
            let packed = Summary::from(map.clone());
            match Summary::from_compact_json(Bytes::from(text.clone())) {
                Some(held) => {
                    prop_assert!(!text.contains('\\'));
                    prop_assert_eq!(held.to_map(), map.clone());
                    prop_assert_eq!(held.len(), map.len());
                    for (k, v) in &map {
                        prop_assert_eq!(held.get(k), Some(v.as_str()));
                    }
                    prop_assert_eq!(&held, &packed);
                }
                None => prop_assert!(text.contains('\\')),
            }
        }
    }
}
