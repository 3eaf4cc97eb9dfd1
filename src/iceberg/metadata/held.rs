//! The items of an array member held out of the JSON tree: each item's compact JSON text beside
//! its typed form. `snapshots` and `snapshot-log` are held so (see `snapshots.rs` for why).
//!
//! An item's text is exactly what serde_json writes for the parsed object (member order and number
//! text kept). When the file wrote the item that way already (Java, pyiceberg and icetrim write
//! compact JSON) the text is a slice of the file's bytes, which the metadata keeps alive: the
//! 100,000-snapshot table's 54 MB of snapshot texts are then not a second copy of what the file
//! holds. Other items (pretty-printed files, escapes serde_json writes otherwise) get their own
//! text. A list that keeps under half of what it held is repacked into one buffer of its own, so a
//! table expired down to a few snapshots does not keep its old file's bytes alive.

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::fields::{Obj, field_error, type_name};
use crate::error::{Error, Result};

/// How one item's typed form is read from its object (`Obj` carries the item's path) and its
/// compact text (which the typed form may keep slices of).
pub(crate) type ItemReader<'r, T> = &'r dyn Fn(&Obj<'_>, &Bytes) -> Result<T>;

/// A typed item that may keep slices of its text: told when the text moves to another buffer (a
/// repack), so that it no longer keeps the old one alive.
pub(crate) trait HeldItem: Clone {
    /// Point what the item keeps of its text into `text`, the same text in its new buffer.
    fn rebase(&mut self, _text: &Bytes) {}
}

/// Each item's compact JSON text and typed form, in array order.
#[derive(Debug, Clone)]
pub(crate) struct HeldItems<T> {
    texts: Vec<Bytes>,
    typed: Vec<T>,
}

impl<T> Default for HeldItems<T> {
    fn default() -> Self {
        HeldItems {
            texts: Vec::new(),
            typed: Vec::new(),
        }
    }
}

impl<T: PartialEq> PartialEq for HeldItems<T> {
    fn eq(&self, other: &Self) -> bool {
        self.typed == other.typed && self.texts == other.texts
    }
}

/// Where an item's text comes from while a list is read.
struct Reading<'a> {
    member: &'a str,
    file: &'a str,
    /// The file's JSON text, which borrowed item texts point into.
    source: Option<&'a Bytes>,
    /// The compact text of the current item, reused from item to item.
    scratch: Vec<u8>,
}

impl<T: HeldItem> HeldItems<T> {
    /// From the items of a parsed array, borrowed from `source` (the file's JSON text).
    pub(crate) fn from_texts(
        items: &[&RawValue],
        source: &Bytes,
        member: &str,
        file: &str,
        read: ItemReader<'_, T>,
    ) -> Result<Self> {
        let mut list = HeldItems::with_capacity(items.len());
        let mut reading = Reading {
            member,
            file,
            source: Some(source),
            scratch: Vec::new(),
        };
        for (i, item) in items.iter().enumerate() {
            let value: Value = serde_json::from_str(item.get()).map_err(|e| {
                field_error(
                    file,
                    &item_path(member, i),
                    &format!("is not valid JSON: {e}"),
                )
            })?;
            list.push_item(value, Some(item.get()), i, &mut reading, read)?;
        }
        Ok(list)
    }

    /// From the items of an array already parsed as values.
    pub(crate) fn from_values(
        items: Vec<Value>,
        member: &str,
        file: &str,
        read: ItemReader<'_, T>,
    ) -> Result<Self> {
        let mut list = HeldItems::with_capacity(items.len());
        list.extend_values(items, member, file, read)?;
        Ok(list)
    }

    /// Validate items (parsed values) and append them; their positions in messages follow the
    /// items already held.
    pub(crate) fn extend_values(
        &mut self,
        items: Vec<Value>,
        member: &str,
        file: &str,
        read: ItemReader<'_, T>,
    ) -> Result<()> {
        let mut reading = Reading {
            member,
            file,
            source: None,
            scratch: Vec::new(),
        };
        let first = self.len();
        for (i, item) in items.into_iter().enumerate() {
            self.push_item(item, None, first + i, &mut reading, read)?;
        }
        Ok(())
    }

    fn with_capacity(n: usize) -> Self {
        HeldItems {
            texts: Vec::with_capacity(n),
            typed: Vec::with_capacity(n),
        }
    }

    /// Validate one item (`position` in the array, for messages) and append it, its text borrowed
    /// from the file when `raw` (its text in the file) is already compact.
    fn push_item(
        &mut self,
        value: Value,
        raw: Option<&str>,
        position: usize,
        reading: &mut Reading<'_>,
        read: ItemReader<'_, T>,
    ) -> Result<()> {
        let path = item_path(reading.member, position);
        let Value::Object(map) = value else {
            return Err(field_error(
                reading.file,
                &path,
                &format!("must be an object, got {}", type_name(&value)),
            ));
        };
        reading.scratch.clear();
        serde_json::to_writer(&mut reading.scratch, &map).map_err(|e| {
            Error::logical(format!(
                "Cannot write {} of '{}': {e}",
                item_path(reading.member, position),
                reading.file
            ))
        })?;
        let borrowed = match (raw, reading.source) {
            (Some(raw), Some(source)) if raw.as_bytes() == reading.scratch.as_slice() => {
                slice_of(source, raw)
            }
            _ => None,
        };
        let text = borrowed.unwrap_or_else(|| Bytes::copy_from_slice(&reading.scratch));
        let typed = read(&Obj::at(&map, path, reading.file), &text)?;
        self.push(text, typed);
        Ok(())
    }

    pub(crate) fn push(&mut self, text: Bytes, typed: T) {
        self.texts.push(text);
        self.typed.push(typed);
    }

    pub(crate) fn typed(&self) -> &[T] {
        &self.typed
    }

    pub(crate) fn len(&self) -> usize {
        self.typed.len()
    }

    #[cfg(test)]
    pub(crate) fn texts(&self) -> &[Bytes] {
        &self.texts
    }

    /// The items `keep` says yes to, in order, texts untouched (repacked when under half of the
    /// text is kept).
    pub(crate) fn retained(&self, keep: impl Fn(&T) -> bool) -> Self {
        let mut list = HeldItems::default();
        for (text, typed) in self.texts.iter().zip(&self.typed) {
            if keep(typed) {
                list.push(text.clone(), typed.clone());
            }
        }
        list.repacked_if_small(self.texts_len());
        list
    }

    /// The items from position `first` on.
    pub(crate) fn tail_from(&self, first: usize) -> Self {
        let mut list = HeldItems {
            texts: self.texts.iter().skip(first).cloned().collect(),
            typed: self.typed.iter().skip(first).cloned().collect(),
        };
        list.repacked_if_small(self.texts_len());
        list
    }

    /// `self` followed by the items of `other` that `take` says yes to.
    pub(crate) fn extended_from(&self, other: &Self, take: impl Fn(&T) -> bool) -> Self {
        let mut list = self.clone();
        for (text, typed) in other.texts.iter().zip(&other.typed) {
            if take(typed) {
                list.push(text.clone(), typed.clone());
            }
        }
        list
    }

    pub(crate) fn texts_len(&self) -> usize {
        self.texts.iter().map(Bytes::len).sum()
    }

    /// Copy the texts into one buffer of their own when they are under half of `held_before`
    /// bytes: the buffers they point into may be much larger than what is left of them.
    fn repacked_if_small(&mut self, held_before: usize) {
        let kept = self.texts_len();
        if kept == 0 || kept.saturating_mul(2) >= held_before {
            return;
        }
        let mut buffer = Vec::with_capacity(kept);
        let mut ends = Vec::with_capacity(self.texts.len());
        for text in &self.texts {
            buffer.extend_from_slice(text);
            ends.push(buffer.len());
        }
        let buffer = Bytes::from(buffer);
        let mut start = 0;
        for ((text, typed), end) in self.texts.iter_mut().zip(&mut self.typed).zip(ends) {
            *text = buffer.slice(start..end);
            typed.rebase(text);
            start = end;
        }
    }

    /// The items as JSON values (for callers that want the whole document as a tree).
    pub(crate) fn to_values(&self) -> Vec<Value> {
        self.texts
            .iter()
            .map(|t| serde_json::from_slice(t).unwrap_or(Value::Null))
            .collect()
    }

    /// The array as compact JSON: `[` the texts joined by `,` `]`.
    pub(crate) fn write_array(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, text) in self.texts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(text);
        }
        out.push(b']');
    }
}

/// The slice of `source` that `text` (borrowed from it) is, without copying; `None` when `text`
/// does not lie inside `source`.
fn slice_of(source: &Bytes, text: &str) -> Option<Bytes> {
    let start = (text.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    let end = start.checked_add(text.len())?;
    (end <= source.len()).then(|| source.slice(start..end))
}

/// The text of member `key` of `object`, a compact JSON object (an item text), as a slice of it;
/// `None` when it has no such member or is not such an object.
pub(crate) fn member_text(object: &Bytes, key: &str) -> Option<Bytes> {
    let bytes = object.as_ref();
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                let end = string_end(bytes, at)?;
                let name = bytes.get(at + 1..end - 1)?;
                if depth == 1 && bytes.get(end) == Some(&b':') && name == key.as_bytes() {
                    let stop = value_end(bytes, end + 1)?;
                    return Some(object.slice(end + 1..stop));
                }
                at = end;
            }
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                at += 1;
            }
            _ => at += 1,
        }
    }
    None
}

/// Where the JSON string opening at `open` ends (past its closing quote).
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut at = open + 1;
    loop {
        match bytes.get(at)? {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
}

/// Where the JSON value starting at `start` ends (at the `,` or `}` after it, or past its own
/// closing bracket).
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    loop {
        match bytes.get(at)? {
            b'"' => at = string_end(bytes, at)?,
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' if depth == 0 => return Some(at),
            b'}' | b']' => {
                depth -= 1;
                at += 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            b',' if depth == 0 => return Some(at),
            _ => at += 1,
        }
    }
}

pub(crate) fn item_path(member: &str, i: usize) -> String {
    format!("{member}[{i}]")
}

/// `map` written compactly, as an item text.
pub(crate) fn compact_text(map: &Map<String, Value>) -> Bytes {
    // Serialising a JSON object into a vector cannot fail.
    Bytes::from(serde_json::to_vec(map).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    impl HeldItem for i64 {}

    fn id_of(o: &Obj<'_>, _text: &Bytes) -> Result<i64> {
        o.req_i64("id")
    }

    fn read_list(text: &str) -> (Bytes, HeldItems<i64>) {
        let source = Bytes::from(text.to_string());
        let items: Vec<&RawValue> = serde_json::from_slice(&source).unwrap();
        let list = HeldItems::from_texts(&items, &source, "xs", "f", &id_of).unwrap();
        (source.clone(), list)
    }

    fn written(list: &HeldItems<i64>) -> String {
        let mut out = Vec::new();
        list.write_array(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// Compact items are slices of the file's bytes; others get a compact text of their own, and
    /// the array is written back compact either way.
    #[test]
    fn compact_items_borrow_the_file_and_others_are_rewritten() {
        let text = r#"[{"id":1,"x":1.50},{ "id" : 2 },{"id":3,"s":"\u00e9\/"}]"#;
        let (source, list) = read_list(text);
        assert_eq!(list.typed(), [1, 2, 3]);
        let inside = |t: &Bytes| {
            let at = t.as_ptr() as usize;
            let base = source.as_ptr() as usize;
            at >= base && at < base + source.len()
        };
        let borrowed: Vec<bool> = list.texts.iter().map(inside).collect();
        assert_eq!(borrowed, [true, false, false]);
        assert_eq!(
            written(&list),
            r#"[{"id":1,"x":1.50},{"id":2},{"id":3,"s":"é/"}]"#
        );
    }

    #[test]
    fn retained_keeps_order_and_repacks_what_is_small() {
        let items: Vec<String> = (0..10).map(|i| format!(r#"{{"id":{i}}}"#)).collect();
        let (source, list) = read_list(&format!("[{}]", items.join(",")));
        let most = list.retained(|&id| id != 4);
        assert_eq!(most.typed(), [0, 1, 2, 3, 5, 6, 7, 8, 9]);
        assert_eq!(most.texts[4].as_ptr(), list.texts[5].as_ptr(), "not copied");
        let few = list.retained(|&id| id == 2 || id == 7);
        assert_eq!(few.typed(), [2, 7]);
        assert_eq!(written(&few), r#"[{"id":2},{"id":7}]"#);
        let base = source.as_ptr() as usize;
        assert!(
            few.texts
                .iter()
                .all(|t| !(base..base + source.len()).contains(&(t.as_ptr() as usize))),
            "repacked into a buffer of its own"
        );
        let tail = list.tail_from(8);
        assert_eq!(tail.typed(), [8, 9]);
        assert_eq!(written(&tail), r#"[{"id":8},{"id":9}]"#);
        assert_eq!(list.tail_from(11).len(), 0);
    }

    #[test]
    fn a_member_text_is_found_at_the_top_level_only() {
        let object = Bytes::from_static(
            br#"{"a":{"summary":"inner"},"s":"\"summary\":x","summary":{"operation":"append","k":"v"},"z":[1,{"summary":2}],"n":null}"#,
        );
        let member =
            |key: &str| member_text(&object, key).map(|b| String::from_utf8(b.to_vec()).unwrap());
        assert_eq!(
            member("summary").as_deref(),
            Some(r#"{"operation":"append","k":"v"}"#)
        );
        assert_eq!(member("a").as_deref(), Some(r#"{"summary":"inner"}"#));
        assert_eq!(member("s").as_deref(), Some(r#""\"summary\":x""#));
        assert_eq!(member("z").as_deref(), Some(r#"[1,{"summary":2}]"#));
        assert_eq!(member("n").as_deref(), Some("null"));
        assert_eq!(member("missing"), None);
        for broken in [
            &br#"{"summary":"#[..],
            br#"{"summary":{"a":"b""#,
            br#"{"summary"#,
            b"}}",
        ] {
            assert_eq!(member_text(&Bytes::from_static(broken), "summary"), None);
        }
    }

    #[test]
    fn items_are_validated_with_their_paths() {
        let source = Bytes::from_static(br#"[{"id":1},7,{"id":"x"}]"#);
        let items: Vec<&RawValue> = serde_json::from_slice(&source).unwrap();
        let e = HeldItems::from_texts(&items, &source, "xs", "f", &id_of).unwrap_err();
        assert!(e.message().contains("'xs[1]' must be an object"), "{e}");
        let e = HeldItems::from_values(
            vec![serde_json::json!({"id": 1}), serde_json::json!({"id": "x"})],
            "xs",
            "f",
            &id_of,
        )
        .unwrap_err();
        assert!(e.message().contains("xs[1].id"), "{e}");
    }
}
