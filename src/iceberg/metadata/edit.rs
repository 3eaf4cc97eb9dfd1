//! Edits of a [`TableMetadata`]: each changes only the JSON members it names and rebuilds the typed
//! view; an edit whose result does not validate leaves the metadata unchanged.
//!
//! Rules (Iceberg spec, Java `TableMetadata` where the spec is silent):
//! - `snapshot-log` after expiry keeps only the entries after the last entry whose snapshot expired
//!   or no longer exists (Java's `updateSnapshotLog`): the log must stay a contiguous history.
//! - `metadata-log` keeps the newest `write.metadata.previous-versions-max` entries (default 100,
//!   at least 1). An entry equal to the last one (ClickHouse logs the file itself) is not repeated.
//! - `set_current_snapshot` writes `-1` for none, moves `refs.main` (v2+, or when `refs` exists)
//!   and appends to `snapshot-log` when the current snapshot changes.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::TableMetadata;
use super::held::compact_text;
use super::snapshots::{SNAPSHOT_LOG, SNAPSHOTS, SnapshotLog};
use crate::error::{Error, Result};
use crate::iceberg::spec::{
    FormatVersion, MAIN_BRANCH, RefKind, Snapshot, SnapshotId, SnapshotLogEntry, SnapshotRef,
    StatisticsFile,
};

/// The table property bounding `metadata-log`.
pub const PREVIOUS_VERSIONS_MAX_PROPERTY: &str = "write.metadata.previous-versions-max";
const PREVIOUS_VERSIONS_MAX_DEFAULT: usize = 100;

type Json = Map<String, Value>;

/// The value of `write.metadata.previous-versions-max` as every commit reads it (and as
/// `SET TBLPROPERTIES` checks it): a non-negative integer (0 keeps one entry, as Java does),
/// else `BAD_ARGUMENTS` naming the property.
pub fn parse_previous_versions_max(text: &str) -> Result<usize> {
    text.trim().parse::<usize>().map_err(|_| {
        Error::bad_arguments(format!(
            "Invalid value '{text}' of table property '{PREVIOUS_VERSIONS_MAX_PROPERTY}': \
             expected a non-negative integer"
        ))
    })
}

impl TableMetadata {
    /// Apply `change` to a copy of the members (the contents of `snapshots` and `snapshot-log`
    /// are not among them: see [`Self::members`]); keep it only when the result validates.
    pub(crate) fn edit(&mut self, change: impl FnOnce(&mut Json) -> Result<()>) -> Result<()> {
        let mut json = self.json.clone();
        change(&mut json)?;
        let view = super::view::derive(&json, &self.file)?;
        self.json = json;
        self.view = view;
        Ok(())
    }

    /// Keep only the snapshots in `keep`, in their original order, each object untouched.
    pub fn retain_snapshots(&mut self, keep: &HashSet<SnapshotId>) -> Result<()> {
        self.snapshots = Arc::new(self.snapshots.retained(|id| keep.contains(&id)));
        Ok(())
    }

    /// Drop the named refs from `refs`; names not present are ignored.
    pub fn remove_refs<S: AsRef<str>>(&mut self, names: &[S]) -> Result<()> {
        self.edit(|json| {
            if let Some(Value::Object(refs)) = json.get_mut("refs") {
                for name in names {
                    refs.shift_remove(name.as_ref());
                }
            }
            Ok(())
        })
    }

    /// Create or replace a ref. An existing ref object keeps its other members; retention fields
    /// are written when `Some` and removed when `None`.
    pub fn set_ref(&mut self, r: &SnapshotRef) -> Result<()> {
        self.require_snapshot(r.snapshot_id, "set_ref")?;
        self.edit(|json| {
            let refs = object_member(json, "refs")?;
            let entry = refs
                .entry(r.name.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Value::Object(obj) = entry {
                obj.insert("snapshot-id".into(), r.snapshot_id.into());
                obj.insert("type".into(), r.kind.as_str().into());
                set_optional(
                    obj,
                    "min-snapshots-to-keep",
                    r.min_snapshots_to_keep.map(i64::from),
                );
                set_optional(obj, "max-snapshot-age-ms", r.max_snapshot_age_ms);
                set_optional(obj, "max-ref-age-ms", r.max_ref_age_ms);
            }
            Ok(())
        })
    }

    /// Set `current-snapshot-id` (`-1` for none); see the module comment for `refs.main` and
    /// `snapshot-log`.
    pub fn set_current_snapshot(
        &mut self,
        id: Option<SnapshotId>,
        timestamp_ms: i64,
    ) -> Result<()> {
        if let Some(id) = id {
            self.require_snapshot(id, "set_current_snapshot")?;
        }
        let changed = id != self.current_snapshot_id();
        let move_main =
            self.format_version() >= FormatVersion::V2 || self.json.contains_key("refs");
        let main = self.ref_named(MAIN_BRANCH).cloned();
        let logged = id.filter(|_| changed);
        self.edit(|json| {
            json.insert("current-snapshot-id".into(), id.unwrap_or(-1).into());
            if logged.is_some() {
                array_member(json, SNAPSHOT_LOG)?;
            }
            Ok(())
        })?;
        if let Some(id) = logged {
            let (text, entry) = log_entry(id, timestamp_ms);
            Arc::make_mut(&mut self.snapshot_log).push(text, entry);
        }
        if !move_main {
            return Ok(());
        }
        match id {
            Some(id) => self.set_ref(&SnapshotRef {
                snapshot_id: id,
                ..main.unwrap_or_else(|| main_branch(id))
            }),
            None => self.remove_refs(&[MAIN_BRANCH]),
        }
    }

    /// Append a snapshot, written as its format version wants (`sequence-number` from v2,
    /// `first-row-id` / `added-rows` in v3, inline `manifests` only in v1).
    pub fn add_snapshot(&mut self, snapshot: &Snapshot) -> Result<()> {
        if self.snapshot(snapshot.snapshot_id).is_some() {
            return Err(Error::logical(format!(
                "add_snapshot: snapshot {} already exists in '{}'",
                snapshot.snapshot_id, self.file
            )));
        }
        let value = snapshot_json(snapshot, self.format_version())?;
        // A failed push adds nothing; `snapshots` may have become `[]` from `null` by then.
        self.edit(|json| array_member(json, SNAPSHOTS).map(|_| ()))?;
        let version = self.format_version();
        Arc::make_mut(&mut self.snapshots).push_value(value, version, &self.file)
    }

    /// Replace `snapshot-log`.
    pub fn set_snapshot_log(&mut self, entries: &[SnapshotLogEntry]) -> Result<()> {
        let mut log = SnapshotLog::default();
        for e in entries {
            let (text, entry) = log_entry(e.snapshot_id, e.timestamp_ms);
            log.push(text, entry);
        }
        self.edit(|json| {
            json.insert(SNAPSHOT_LOG.into(), Value::Array(Vec::new()));
            Ok(())
        })?;
        self.snapshot_log = Arc::new(log);
        Ok(())
    }

    /// Keep only the `snapshot-log` entries after the last one whose snapshot is in `expired` or
    /// is no longer listed.
    pub fn trim_snapshot_log_after_expired(&mut self, expired: &HashSet<SnapshotId>) -> Result<()> {
        let listed: HashSet<SnapshotId> = self.snapshots().iter().map(|s| s.snapshot_id).collect();
        let gone = |id: SnapshotId| expired.contains(&id) || !listed.contains(&id);
        let Some(last_gone) = self
            .snapshot_log()
            .iter()
            .rposition(|e| gone(e.snapshot_id))
        else {
            return Ok(());
        };
        self.snapshot_log = Arc::new(self.snapshot_log.tail_from(last_gone + 1));
        Ok(())
    }

    /// An expiry's whole edit in one pass: keep the snapshots in `keep` (original order, objects
    /// untouched), drop the refs in `removed_refs`, trim `snapshot-log` as
    /// [`Self::trim_snapshot_log_after_expired`] does for `expired`, and keep the statistics entries
    /// of `keep_statistics`. The same result as those edits in turn, but only kept members are
    /// copied and the view is derived once (each edit copies the whole document: on a
    /// 1,000-snapshot table the separate edits cost more than the rest of the commit).
    pub fn expiry_edit(
        &self,
        keep: &HashSet<SnapshotId>,
        expired: &HashSet<SnapshotId>,
        removed_refs: &[&str],
        keep_statistics: &HashSet<SnapshotId>,
    ) -> Result<TableMetadata> {
        let listed: HashSet<SnapshotId> = self.snapshots().iter().map(|s| s.snapshot_id).collect();
        let gone = |id: SnapshotId| expired.contains(&id) || !listed.contains(&id);
        let log_drop = self
            .snapshot_log()
            .iter()
            .rposition(|e| gone(e.snapshot_id))
            .map_or(0, |last| last + 1);
        fn kept_by(set: &HashSet<SnapshotId>) -> impl Fn(&&Value) -> bool + '_ {
            move |o| id_of(o, "snapshot-id").is_some_and(|id| set.contains(&id))
        }
        let mut json = Map::with_capacity(self.json.len());
        for (key, value) in &self.json {
            let value = match (key.as_str(), value) {
                ("statistics" | "partition-statistics", Value::Array(items)) => Value::Array(
                    items
                        .iter()
                        .filter(kept_by(keep_statistics))
                        .cloned()
                        .collect(),
                ),
                ("refs", Value::Object(refs)) => Value::Object(
                    refs.iter()
                        .filter(|(name, _)| !removed_refs.contains(&name.as_str()))
                        .map(|(name, r)| (name.clone(), r.clone()))
                        .collect(),
                ),
                _ => value.clone(),
            };
            json.insert(key.clone(), value);
        }
        let view = super::view::derive(&json, &self.file)?;
        Ok(TableMetadata {
            file: self.file.clone(),
            json,
            snapshots: Arc::new(self.snapshots.retained(|id| keep.contains(&id))),
            snapshot_log: match log_drop {
                0 => Arc::clone(&self.snapshot_log),
                _ => Arc::new(self.snapshot_log.tail_from(log_drop)),
            },
            view,
        })
    }

    /// `self` plus the snapshots of `base` that are in `expired` and their `statistics` and
    /// `partition-statistics` entries, appended: the table as it stood for an interrupted expiry,
    /// which a resumed one plans its deletions on.
    pub fn with_expired_of(
        &self,
        base: &TableMetadata,
        expired: &BTreeSet<SnapshotId>,
    ) -> Result<TableMetadata> {
        let mut json = self.json.clone();
        let has_expired = base
            .snapshots()
            .iter()
            .any(|s| expired.contains(&s.snapshot_id));
        if has_expired {
            extend_array(&mut json, SNAPSHOTS, Vec::new(), &self.file)?;
        }
        for key in ["statistics", "partition-statistics"] {
            let from_base: Vec<Value> = base
                .json
                .get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter(|v| id_of(v, "snapshot-id").is_some_and(|id| expired.contains(&id)))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            if !from_base.is_empty() {
                extend_array(&mut json, key, from_base, &self.file)?;
            }
        }
        let view = super::view::derive(&json, &self.file)?;
        let snapshots = self
            .snapshots
            .extended_from(&base.snapshots, |id| expired.contains(&id));
        Ok(TableMetadata {
            file: self.file.clone(),
            json,
            snapshots: Arc::new(snapshots),
            snapshot_log: Arc::clone(&self.snapshot_log),
            view,
        })
    }

    /// Drop `statistics` and `partition-statistics` entries of snapshots not in `keep`.
    pub fn retain_statistics(&mut self, keep: &HashSet<SnapshotId>) -> Result<()> {
        self.edit(|json| {
            for key in ["statistics", "partition-statistics"] {
                retain_objects(json, key, |o| {
                    id_of(o, "snapshot-id").is_some_and(|id| keep.contains(&id))
                });
            }
            Ok(())
        })
    }

    /// Drop the schemas with these ids from `schemas` (Iceberg 1.10 `RemoveSchemas`); the caller
    /// never names the current schema.
    pub fn remove_schemas(&mut self, ids: &[i32]) -> Result<()> {
        self.remove_by_id("schemas", "schema-id", ids)
    }

    /// Drop the partition specs with these ids from `partition-specs` (Iceberg 1.10
    /// `RemovePartitionSpecs`); the caller never names the default spec.
    pub fn remove_partition_specs(&mut self, ids: &[i32]) -> Result<()> {
        self.remove_by_id("partition-specs", "spec-id", ids)
    }

    fn remove_by_id(&mut self, member: &str, key: &str, ids: &[i32]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.edit(|json| {
            if let Some(Value::Array(items)) = json.get_mut(member) {
                items.retain(|o| {
                    !o.get(key)
                        .and_then(Value::as_i64)
                        .is_some_and(|id| ids.iter().any(|i| i64::from(*i) == id))
                });
            }
            Ok(())
        })
    }

    /// `write.metadata.previous-versions-max`, default 100; an invalid value is `BAD_ARGUMENTS`.
    pub fn previous_versions_max(&self) -> Result<usize> {
        match self.property(PREVIOUS_VERSIONS_MAX_PROPERTY) {
            None => Ok(PREVIOUS_VERSIONS_MAX_DEFAULT),
            Some(text) => parse_previous_versions_max(text),
        }
    }

    /// Append `previous_file` to `metadata-log` and keep the newest `max` entries (at least 1).
    pub fn append_metadata_log(
        &mut self,
        previous_file: &str,
        timestamp_ms: i64,
        max: usize,
    ) -> Result<()> {
        let repeated = self
            .metadata_log()
            .last()
            .is_some_and(|e| e.metadata_file == previous_file);
        self.edit(|json| {
            let log = array_member(json, "metadata-log")?;
            if !repeated {
                let mut entry = Map::new();
                entry.insert("metadata-file".into(), previous_file.into());
                entry.insert("timestamp-ms".into(), timestamp_ms.into());
                log.push(Value::Object(entry));
            }
            let excess = log.len().saturating_sub(max.max(1));
            log.drain(..excess);
            Ok(())
        })
    }

    pub fn set_last_updated_ms(&mut self, ms: i64) -> Result<()> {
        self.edit(|json| {
            json.insert("last-updated-ms".into(), ms.into());
            Ok(())
        })
    }

    pub fn set_last_sequence_number(&mut self, n: i64) -> Result<()> {
        self.edit(|json| {
            json.insert("last-sequence-number".into(), n.into());
            Ok(())
        })
    }

    /// v3 `next-row-id`.
    pub fn set_next_row_id(&mut self, n: i64) -> Result<()> {
        self.edit(|json| {
            json.insert("next-row-id".into(), n.into());
            Ok(())
        })
    }

    pub fn set_property(&mut self, key: &str, value: &str) -> Result<()> {
        self.edit(|json| {
            object_member(json, "properties")?.insert(key.into(), value.into());
            Ok(())
        })
    }

    pub fn remove_property(&mut self, key: &str) -> Result<()> {
        self.edit(|json| {
            if let Some(Value::Object(props)) = json.get_mut("properties") {
                props.shift_remove(key);
            }
            Ok(())
        })
    }

    /// Create or replace the statistics entry of `stats.snapshot_id` (in `partition-statistics`
    /// when `stats.partition_statistics`). A replaced entry keeps its other members (Puffin
    /// `blob-metadata`, footer size); a new one holds the fields [`StatisticsFile`] knows.
    pub fn set_statistics(&mut self, stats: &StatisticsFile) -> Result<()> {
        let key = statistics_key(stats.partition_statistics);
        self.edit(|json| {
            let list = array_member(json, key)?;
            let existing = list
                .iter_mut()
                .find(|v| id_of(v, "snapshot-id") == Some(stats.snapshot_id));
            let entry = match existing {
                Some(entry) => entry,
                None => {
                    list.push(Value::Object(Map::new()));
                    list.last_mut()
                        .ok_or_else(|| Error::logical("statistics list is empty after push"))?
                }
            };
            if let Value::Object(obj) = entry {
                obj.insert("snapshot-id".into(), stats.snapshot_id.into());
                obj.insert("statistics-path".into(), stats.path.clone().into());
                set_optional(obj, "file-size-in-bytes", stats.file_size_in_bytes);
            }
            Ok(())
        })
    }

    /// Remove the `statistics` entry of `snapshot_id`.
    pub fn remove_statistics(&mut self, snapshot_id: SnapshotId) -> Result<()> {
        self.remove_statistics_in(statistics_key(false), snapshot_id)
    }

    /// Remove the `partition-statistics` entry of `snapshot_id`.
    pub fn remove_partition_statistics(&mut self, snapshot_id: SnapshotId) -> Result<()> {
        self.remove_statistics_in(statistics_key(true), snapshot_id)
    }

    fn remove_statistics_in(&mut self, key: &str, snapshot_id: SnapshotId) -> Result<()> {
        self.edit(|json| {
            retain_objects(json, key, |o| id_of(o, "snapshot-id") != Some(snapshot_id));
            Ok(())
        })
    }

    fn require_snapshot(&self, id: SnapshotId, what: &str) -> Result<()> {
        match self.snapshot(id) {
            Some(_) => Ok(()),
            None => Err(Error::logical(format!(
                "{what}: snapshot {id} is not in '{}'",
                self.file
            ))),
        }
    }
}

fn statistics_key(partition: bool) -> &'static str {
    if partition {
        "partition-statistics"
    } else {
        "statistics"
    }
}

fn main_branch(id: SnapshotId) -> SnapshotRef {
    SnapshotRef {
        name: MAIN_BRANCH.into(),
        kind: RefKind::Branch,
        snapshot_id: id,
        min_snapshots_to_keep: None,
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    }
}

fn id_of(value: &Value, key: &str) -> Option<i64> {
    value.get(key).and_then(Value::as_i64)
}

/// A new `snapshot-log` entry: its compact text and typed form.
fn log_entry(id: SnapshotId, timestamp_ms: i64) -> (bytes::Bytes, SnapshotLogEntry) {
    let mut entry = Map::new();
    entry.insert("snapshot-id".into(), id.into());
    entry.insert("timestamp-ms".into(), timestamp_ms.into());
    let typed = SnapshotLogEntry {
        snapshot_id: id,
        timestamp_ms,
    };
    (compact_text(&entry), typed)
}

fn set_optional(obj: &mut Json, key: &str, value: Option<i64>) {
    match value {
        Some(v) => {
            obj.insert(key.into(), v.into());
        }
        None => {
            obj.shift_remove(key);
        }
    }
}

/// Append `items` to the array member `key` (created when absent; any other value is an error).
fn extend_array(json: &mut Json, key: &str, items: Vec<Value>, file: &str) -> Result<()> {
    match json
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        Value::Array(list) => {
            list.extend(items);
            Ok(())
        }
        _ => Err(Error::incorrect_data(format!(
            "'{key}' of '{file}' is not an array"
        ))),
    }
}

fn retain_objects(json: &mut Json, key: &str, keep: impl Fn(&Value) -> bool) {
    if let Some(Value::Array(items)) = json.get_mut(key) {
        items.retain(|v| keep(v));
    }
}

/// The array member `key`, created (or replacing a `null`) when absent.
fn array_member<'a>(json: &'a mut Json, key: &str) -> Result<&'a mut Vec<Value>> {
    let slot = json.entry(key).or_insert(Value::Null);
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
        .ok_or_else(|| Error::logical(format!("'{key}' is not an array after creation")))
}

/// The object member `key`, created (or replacing a `null`) when absent.
fn object_member<'a>(json: &'a mut Json, key: &str) -> Result<&'a mut Json> {
    let slot = json.entry(key).or_insert(Value::Null);
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| Error::logical(format!("'{key}' is not an object after creation")))
}

/// A snapshot as its format version writes it; the member order follows Java's writer.
fn snapshot_json(s: &Snapshot, version: FormatVersion) -> Result<Value> {
    let mut obj = Map::new();
    obj.insert("snapshot-id".into(), s.snapshot_id.into());
    if let Some(parent) = s.parent_snapshot_id {
        obj.insert("parent-snapshot-id".into(), parent.into());
    }
    if version >= FormatVersion::V2 {
        obj.insert("sequence-number".into(), s.sequence_number.into());
    }
    obj.insert("timestamp-ms".into(), s.timestamp_ms.into());
    match (&s.manifest_list, version) {
        (Some(list), _) => {
            obj.insert("manifest-list".into(), list.clone().into());
        }
        (None, FormatVersion::V1) => {
            obj.insert("manifests".into(), s.manifests.clone().into());
        }
        (None, _) => {
            return Err(Error::logical(format!(
                "add_snapshot: snapshot {} has no manifest list, required from format v2",
                s.snapshot_id
            )));
        }
    }
    obj.insert("summary".into(), summary_json(s));
    if let Some(schema_id) = s.schema_id {
        obj.insert("schema-id".into(), schema_id.into());
    }
    if version >= FormatVersion::V3 {
        let (Some(first_row_id), Some(added_rows)) = (s.first_row_id, s.added_rows) else {
            return Err(Error::logical(format!(
                "add_snapshot: v3 snapshot {} needs first-row-id and added-rows",
                s.snapshot_id
            )));
        };
        obj.insert("first-row-id".into(), first_row_id.into());
        obj.insert("added-rows".into(), added_rows.into());
    }
    Ok(Value::Object(obj))
}

/// `summary` with `operation` first, then the rest in key order.
fn summary_json(s: &Snapshot) -> Value {
    let mut summary = Map::new();
    if let Some(op) = s.operation() {
        summary.insert("operation".into(), op.into());
    }
    for (k, v) in s.summary.iter().filter(|(k, _)| *k != "operation") {
        summary.insert(k.into(), v.into());
    }
    Value::Object(summary)
}
