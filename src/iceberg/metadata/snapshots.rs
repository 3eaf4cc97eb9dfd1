//! The members held out of the JSON tree — `snapshots` and `snapshot-log` — and the reading and
//! writing of a whole document around them.
//!
//! `snapshots` is most of a long-lived table's metadata (100,000 snapshots: 54 of its 60 MB), and
//! `snapshot-log` has as many entries. As a `serde_json` tree with `preserve_order` and
//! `arbitrary_precision` every member, key and number is an allocation of its own: 350 MB for that
//! file before the typed view, and still 31 MB and 600,000 allocations for the log alone. So each
//! item is held as its compact JSON text beside its typed form ([`HeldItems`]), and the document's
//! member holds an empty array that only marks its place: [`DocumentOut`] writes the texts there.
//!
//! Invariant: when the members map has a held member as an array, that array is empty and the
//! items are in the held list; otherwise (absent or `null`) the list is empty.

use std::collections::HashMap;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::fields::Obj;
use super::held::{HeldItem, HeldItems, member_text};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::spec::{FormatVersion, Snapshot, SnapshotId, SnapshotLogEntry, Summary};

/// The snapshots member.
pub(crate) const SNAPSHOTS: &str = "snapshots";
/// The snapshot log member.
pub(crate) const SNAPSHOT_LOG: &str = "snapshot-log";

/// The snapshots, each with its compact JSON text, in file order, with an index by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SnapshotList {
    items: HeldItems<Snapshot>,
    /// Position by id (the first one when an id repeats).
    index: HashMap<SnapshotId, usize>,
}

impl SnapshotList {
    /// From the items of a parsed `snapshots` array, borrowed from `source` (`snapshots[i]` in
    /// messages).
    pub(crate) fn from_texts(
        items: &[&RawValue],
        source: &Bytes,
        version: FormatVersion,
        file: &str,
    ) -> Result<Self> {
        let read = |o: &Obj<'_>, text: &Bytes| super::view::snapshot(o, text, version);
        Ok(Self::indexed(HeldItems::from_texts(
            items, source, SNAPSHOTS, file, &read,
        )?))
    }

    /// From the items of a `snapshots` array already parsed as values.
    pub(crate) fn from_values(
        items: Vec<Value>,
        version: FormatVersion,
        file: &str,
    ) -> Result<Self> {
        let read = |o: &Obj<'_>, text: &Bytes| super::view::snapshot(o, text, version);
        Ok(Self::indexed(HeldItems::from_values(
            items, SNAPSHOTS, file, &read,
        )?))
    }

    fn indexed(items: HeldItems<Snapshot>) -> Self {
        let mut index = HashMap::with_capacity(items.len());
        for (i, s) in items.typed().iter().enumerate() {
            index.entry(s.snapshot_id).or_insert(i);
        }
        SnapshotList { items, index }
    }

    /// Validate one snapshot object and append it (its position in messages follows the list).
    pub(crate) fn push_value(
        &mut self,
        value: Value,
        version: FormatVersion,
        file: &str,
    ) -> Result<()> {
        let read = |o: &Obj<'_>, text: &Bytes| super::view::snapshot(o, text, version);
        let first = self.items.len();
        self.items
            .extend_values(vec![value], SNAPSHOTS, file, &read)?;
        for (i, s) in self.items.typed().iter().enumerate().skip(first) {
            self.index.entry(s.snapshot_id).or_insert(i);
        }
        Ok(())
    }

    pub(crate) fn snapshots(&self) -> &[Snapshot] {
        self.items.typed()
    }

    pub(crate) fn get(&self, id: SnapshotId) -> Option<&Snapshot> {
        self.items.typed().get(*self.index.get(&id)?)
    }

    /// The snapshots `keep` says yes to, in order, texts untouched.
    pub(crate) fn retained(&self, keep: impl Fn(SnapshotId) -> bool) -> Self {
        Self::indexed(self.items.retained(|s| keep(s.snapshot_id)))
    }

    /// `self` followed by the snapshots of `other` that `take` says yes to.
    pub(crate) fn extended_from(&self, other: &Self, take: impl Fn(SnapshotId) -> bool) -> Self {
        Self::indexed(
            self.items
                .extended_from(&other.items, |s| take(s.snapshot_id)),
        )
    }

    pub(crate) fn items(&self) -> &HeldItems<Snapshot> {
        &self.items
    }
}

/// The `snapshot-log` entries, each with its compact JSON text.
pub(crate) type SnapshotLog = HeldItems<SnapshotLogEntry>;

/// A snapshot keeps its summary as a slice of its text when it can (see [`Summary`]).
impl HeldItem for Snapshot {
    fn rebase(&mut self, text: &Bytes) {
        if let Some(summary) = summary_text(text) {
            self.summary = summary;
        }
    }
}

impl HeldItem for SnapshotLogEntry {}

/// The `summary` of a snapshot's compact text, held as that text (`None` when it is absent or
/// must be packed).
pub(super) fn summary_text(snapshot: &Bytes) -> Option<Summary> {
    Summary::from_compact_json(member_text(snapshot, "summary")?)
}

fn log_entry(o: &Obj<'_>, _text: &Bytes) -> Result<SnapshotLogEntry> {
    Ok(SnapshotLogEntry {
        snapshot_id: o.req_i64("snapshot-id")?,
        timestamp_ms: o.req_i64("timestamp-ms")?,
    })
}

/// The log from the items of a parsed `snapshot-log` array, borrowed from `source`.
pub(crate) fn log_from_texts(
    items: &[&RawValue],
    source: &Bytes,
    file: &str,
) -> Result<SnapshotLog> {
    HeldItems::from_texts(items, source, SNAPSHOT_LOG, file, &log_entry)
}

/// The log from entries already parsed as values.
pub(crate) fn log_from_values(items: Vec<Value>, file: &str) -> Result<SnapshotLog> {
    HeldItems::from_values(items, SNAPSHOT_LOG, file, &log_entry)
}

/// A metadata file's top-level object as read: every member but the held ones as a JSON tree
/// (a held member, when an array, as an empty placeholder) and the held members' item texts,
/// borrowed from the file's bytes.
pub(crate) struct DocumentIn<'a> {
    pub members: Map<String, Value>,
    pub snapshots: Vec<&'a RawValue>,
    pub snapshot_log: Vec<&'a RawValue>,
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
        let mut document = DocumentIn {
            members: Map::new(),
            snapshots: Vec::new(),
            snapshot_log: Vec::new(),
        };
        while let Some(key) = map.next_key::<String>()? {
            let held = match key.as_str() {
                SNAPSHOTS => &mut document.snapshots,
                SNAPSHOT_LOG => &mut document.snapshot_log,
                _ => {
                    let value: Value = map.next_value()?;
                    document.members.insert(key, value);
                    continue;
                }
            };
            let raw: &'de RawValue = map.next_value()?;
            let text: &'de str = raw.get();
            if text.starts_with('[') {
                *held = serde_json::from_str(text).map_err(de::Error::custom)?;
                document.members.insert(key, Value::Array(Vec::new()));
            } else {
                held.clear();
                let value = serde_json::from_str(text).map_err(de::Error::custom)?;
                document.members.insert(key, value);
            }
        }
        Ok(document)
    }
}

/// The whole document for writing: `members` in order, the held items' texts in their place.
pub(crate) struct DocumentOut<'a> {
    pub members: &'a Map<String, Value>,
    pub snapshots: &'a SnapshotList,
    pub snapshot_log: &'a SnapshotLog,
}

impl DocumentOut<'_> {
    /// The compact JSON text (what serde_json writes for the whole tree).
    pub(crate) fn to_vec(&self) -> Result<Vec<u8>> {
        let held_len: usize = [
            self.snapshots.items().texts_len(),
            self.snapshot_log.texts_len(),
        ]
        .iter()
        .sum();
        let mut out = Vec::with_capacity(held_len + 4096);
        out.push(b'{');
        for (i, (key, value)) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key).map_err(write_error)?;
            out.push(b':');
            match (key.as_str(), value) {
                (SNAPSHOTS, Value::Array(_)) => self.snapshots.items().write_array(&mut out),
                (SNAPSHOT_LOG, Value::Array(_)) => self.snapshot_log.write_array(&mut out),
                _ => serde_json::to_writer(&mut out, value).map_err(write_error)?,
            }
        }
        out.push(b'}');
        Ok(out)
    }
}

fn write_error(e: serde_json::Error) -> Error {
    Error::logical(format!("Cannot write metadata JSON: {e}"))
}

/// Split a whole document tree: its held members (when arrays) become lists.
pub(crate) fn split_values(
    mut members: Map<String, Value>,
    version: FormatVersion,
    file: &str,
) -> Result<(Map<String, Value>, SnapshotList, SnapshotLog)> {
    let snapshots = match members.get_mut(SNAPSHOTS) {
        Some(Value::Array(items)) => {
            SnapshotList::from_values(std::mem::take(items), version, file)?
        }
        _ => SnapshotList::default(),
    };
    let log = match members.get_mut(SNAPSHOT_LOG) {
        Some(Value::Array(items)) => log_from_values(std::mem::take(items), file)?,
        _ => SnapshotLog::default(),
    };
    Ok((members, snapshots, log))
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
