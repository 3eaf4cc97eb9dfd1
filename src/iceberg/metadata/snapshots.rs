//! The `snapshots` member, held compactly, and the reading and writing of a whole document around
//! it.
//!
//! `snapshots` is most of a long-lived table's metadata (100,000 snapshots: 54 of its 60 MB). As a
//! `serde_json` tree with `preserve_order` and `arbitrary_precision` every member, key and number
//! is an allocation of its own: 350 MB for that file before the typed view. So each snapshot is
//! held as its compact JSON text (exactly what serde_json writes for the parsed object: member
//! order and number text kept) beside its typed [`Snapshot`], and the document's `snapshots` member
//! holds an empty array that only marks its place: [`DocumentOut`] writes the texts there.
//!
//! Invariant: when the members map has `snapshots` as an array, that array is empty and the
//! snapshots are the [`SnapshotList`]; otherwise (absent or `null`) the list is empty.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::fields::{Obj, field_error, type_name};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::spec::{FormatVersion, Snapshot, SnapshotId};

/// The member this module holds.
pub(crate) const SNAPSHOTS: &str = "snapshots";

/// Each snapshot's compact JSON text and typed fields, in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct SnapshotList {
    texts: Vec<Box<RawValue>>,
    typed: Vec<Snapshot>,
    /// Position by id (the first one when an id repeats).
    index: HashMap<SnapshotId, usize>,
}

impl PartialEq for SnapshotList {
    fn eq(&self, other: &Self) -> bool {
        self.typed == other.typed
            && self.texts.len() == other.texts.len()
            && self
                .texts
                .iter()
                .zip(&other.texts)
                .all(|(a, b)| a.get() == b.get())
    }
}

impl SnapshotList {
    /// From the items of a parsed `snapshots` array (`snapshots[i]` in messages).
    pub(crate) fn from_texts(
        items: &[&RawValue],
        version: FormatVersion,
        file: &str,
    ) -> Result<Self> {
        let mut list = SnapshotList::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let value: Value = serde_json::from_str(item.get()).map_err(|e| {
                field_error(file, &item_path(i), &format!("is not valid JSON: {e}"))
            })?;
            list.push_value(value, i, version, file)?;
        }
        Ok(list)
    }

    /// From the items of a `snapshots` array already parsed as values.
    pub(crate) fn from_values(
        items: Vec<Value>,
        version: FormatVersion,
        file: &str,
    ) -> Result<Self> {
        let mut list = SnapshotList::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            list.push_value(item, i, version, file)?;
        }
        Ok(list)
    }

    fn with_capacity(n: usize) -> Self {
        SnapshotList {
            texts: Vec::with_capacity(n),
            typed: Vec::with_capacity(n),
            index: HashMap::with_capacity(n),
        }
    }

    /// Validate one snapshot object (item `position` of the array, for messages) and append it.
    pub(crate) fn push_value(
        &mut self,
        value: Value,
        position: usize,
        version: FormatVersion,
        file: &str,
    ) -> Result<()> {
        let path = item_path(position);
        let Value::Object(map) = value else {
            return Err(field_error(
                file,
                &path,
                &format!("must be an object, got {}", type_name(&value)),
            ));
        };
        let typed = super::view::snapshot(&Obj::at(&map, path, file), version)?;
        let text = serde_json::value::to_raw_value(&map).map_err(|e| {
            Error::logical(format!("Cannot write snapshot {}: {e}", typed.snapshot_id))
        })?;
        self.push(text, typed);
        Ok(())
    }

    /// Append the snapshots of `other`.
    pub(crate) fn append(&mut self, other: SnapshotList) {
        for (text, typed) in other.texts.into_iter().zip(other.typed) {
            self.push(text, typed);
        }
    }

    fn push(&mut self, text: Box<RawValue>, typed: Snapshot) {
        self.index
            .entry(typed.snapshot_id)
            .or_insert(self.typed.len());
        self.texts.push(text);
        self.typed.push(typed);
    }

    pub(crate) fn snapshots(&self) -> &[Snapshot] {
        &self.typed
    }

    pub(crate) fn get(&self, id: SnapshotId) -> Option<&Snapshot> {
        self.typed.get(*self.index.get(&id)?)
    }

    /// The snapshots `keep` says yes to, in order, texts untouched.
    pub(crate) fn retained(&self, keep: impl Fn(SnapshotId) -> bool) -> Self {
        let mut list = SnapshotList::default();
        for (text, typed) in self.texts.iter().zip(&self.typed) {
            if keep(typed.snapshot_id) {
                list.push(text.clone(), typed.clone());
            }
        }
        list
    }

    /// `self` followed by the snapshots of `other` that `take` says yes to.
    pub(crate) fn extended_from(&self, other: &Self, take: impl Fn(SnapshotId) -> bool) -> Self {
        let mut list = self.clone();
        for (text, typed) in other.texts.iter().zip(&other.typed) {
            if take(typed.snapshot_id) {
                list.push(text.clone(), typed.clone());
            }
        }
        list
    }

    /// The snapshots as JSON values (for callers that want the whole document as a tree).
    pub(crate) fn to_values(&self) -> Vec<Value> {
        self.texts
            .iter()
            .map(|t| serde_json::from_str(t.get()).unwrap_or(Value::Null))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.typed.len()
    }
}

fn item_path(i: usize) -> String {
    format!("{SNAPSHOTS}[{i}]")
}

/// A metadata file's top-level object as read: every member but the snapshots as a JSON tree
/// (`snapshots`, when an array, as an empty placeholder) and the snapshots' texts, borrowed from
/// the file's bytes.
pub(crate) struct DocumentIn<'a> {
    pub members: Map<String, Value>,
    pub snapshots: Vec<&'a RawValue>,
}

impl<'a> DocumentIn<'a> {
    /// Parse the JSON text of a metadata file.
    pub(crate) fn parse(text: &'a [u8], file: &str) -> Result<Self> {
        let first = text.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|&b| b != b'{') {
            return Err(Error::incorrect_data(format!(
                "Cannot parse Iceberg metadata file '{file}': the top level is not a JSON object"
            )));
        }
        serde_json::from_slice(text).map_err(|e| {
            let message = format!("Cannot parse Iceberg metadata file '{file}': invalid JSON: {e}");
            Error::with_source(ErrorKind::IncorrectData, message, e)
        })
    }
}

impl<'de> Deserialize<'de> for DocumentIn<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_map(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = DocumentIn<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    /// A repeated member keeps its first position and its last value, as serde_json's map does.
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut members = Map::new();
        let mut snapshots = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if key != SNAPSHOTS {
                let value: Value = map.next_value()?;
                members.insert(key, value);
                continue;
            }
            let raw: &'de RawValue = map.next_value()?;
            let text: &'de str = raw.get();
            if text.starts_with('[') {
                snapshots = serde_json::from_str(text).map_err(de::Error::custom)?;
                members.insert(key, Value::Array(Vec::new()));
            } else {
                snapshots = Vec::new();
                members.insert(key, serde_json::from_str(text).map_err(de::Error::custom)?);
            }
        }
        Ok(DocumentIn { members, snapshots })
    }
}

/// The whole document for writing: `members` in order, the snapshots' texts in their place.
pub(crate) struct DocumentOut<'a> {
    pub members: &'a Map<String, Value>,
    pub snapshots: &'a SnapshotList,
}

impl Serialize for DocumentOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(self.members.len()))?;
        for (key, value) in self.members {
            if key == SNAPSHOTS && value.is_array() {
                out.serialize_entry(key, &self.snapshots.texts)?;
            } else {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

/// Split a whole document tree: its `snapshots` array (when it is one) becomes the list.
pub(crate) fn split_values(
    mut members: Map<String, Value>,
    version: FormatVersion,
    file: &str,
) -> Result<(Map<String, Value>, SnapshotList)> {
    let list = match members.get_mut(SNAPSHOTS) {
        Some(Value::Array(items)) => {
            SnapshotList::from_values(std::mem::take(items), version, file)?
        }
        _ => SnapshotList::default(),
    };
    Ok((members, list))
}

#[cfg(test)]
mod tests {

    use super::DocumentIn;
    use crate::error::ErrorKind;

    /// Malformed JSON is `INCORRECT_DATA` naming the file, with serde's error as the source.
    #[test]
    fn invalid_json_keeps_the_parser_error_as_the_source() {
        let Err(err) =
            DocumentIn::parse(b"{\"format-version\": 2,", "/t/metadata/v1.metadata.json")
        else {
            panic!("truncated JSON parsed");
        };
        assert_eq!(err.kind(), ErrorKind::IncorrectData);
        assert!(
            err.message()
                .starts_with("Cannot parse Iceberg metadata file '/t/metadata/v1.metadata.json'"),
            "{err}"
        );
        let source = err.cause().expect("the parser's error");
        assert!(
            source.downcast_ref::<serde_json::Error>().is_some(),
            "{source:?}"
        );
    }
}
