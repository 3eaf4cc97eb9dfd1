//! The REST commit of a new metadata computed from a loaded base: requirements and updates
//! (Iceberg REST OpenAPI `CommitTableRequest`), derived from the two documents. Pure.
//!
//! Requirements: `assert-table-uuid`; `assert-ref-snapshot-id` for every branch and tag as loaded
//! (so any concurrent change to a ref fails the commit with 409 and the caller re-plans) and, with
//! `snapshot-id: null`, for every ref the commit creates; `assert-current-schema-id` when schemas
//! are removed and `assert-default-spec-id` when partition specs are removed.
//!
//! Updates, in an order a server can apply one by one: `add-snapshot` (new snapshots, in
//! document order), `remove-snapshot-ref` (refs gone), `set-snapshot-ref` (refs new or moved or
//! with new retention), statistics updates, `remove-snapshots` (all ids in one update;
//! [`split_remove_snapshots`] gives the one-id-per-update form for servers that cannot parse
//! that), `set-properties`,
//! `remove-properties`, `remove-schemas`, `remove-partition-specs`, `set-statistics` /
//! `remove-statistics`, `set-partition-statistics` / `remove-partition-statistics` (statistics
//! before `remove-snapshots`, so no server's own clean-up makes a removal fail).
//!
//! Members the server maintains itself are not compared: `last-updated-ms`, `metadata-log`,
//! `snapshot-log`, `last-sequence-number`, `next-row-id`, `current-snapshot-id` (follows `main`).
//! Any other difference (schemas added, sort orders, location, format version, ...) cannot be
//! sent by this function and is refused (`NOT_IMPLEMENTED`) rather than silently dropped.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;

/// The body of a REST commit: `{"requirements": [...], "updates": [...]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RestChanges {
    pub requirements: Vec<Value>,
    pub updates: Vec<Value>,
}

impl RestChanges {
    /// Nothing to send.
    pub fn is_empty(&self) -> bool {
        self.updates.is_empty()
    }

    /// The request body, with the table identifier.
    pub fn body(&self, namespace: &[String], name: &str) -> Value {
        json!({
            "identifier": {"namespace": namespace, "name": name},
            "requirements": self.requirements,
            "updates": self.updates,
        })
    }
}

/// Members compared by the updates below or maintained by the server.
const HANDLED: &[&str] = &[
    "snapshots",
    "refs",
    "properties",
    "schemas",
    "partition-specs",
    "statistics",
    "partition-statistics",
    "last-updated-ms",
    "metadata-log",
    "snapshot-log",
    "last-sequence-number",
    "next-row-id",
    "current-snapshot-id",
];

/// The REST requirements and updates that turn `base` into `new`; see the module comment.
pub fn rest_changes(base: &TableMetadata, new: &TableMetadata) -> Result<RestChanges> {
    let (b, n) = (base.json(), new.json());
    refuse_unhandled(&b, &n)?;
    let mut requirements = Vec::new();
    let mut updates = Vec::new();
    if let Some(uuid) = base.table_uuid() {
        requirements.push(json!({"type": "assert-table-uuid", "uuid": uuid}));
    }
    let base_refs = refs_of(&b);
    let new_refs = refs_of(&n);
    for (name, r) in &base_refs {
        requirements.push(json!({
            "type": "assert-ref-snapshot-id",
            "ref": name,
            "snapshot-id": r.get("snapshot-id").cloned().unwrap_or(Value::Null),
        }));
    }
    for name in new_refs.keys().filter(|k| !base_refs.contains_key(*k)) {
        requirements.push(json!({
            "type": "assert-ref-snapshot-id", "ref": name, "snapshot-id": Value::Null,
        }));
    }

    // Snapshots.
    let base_snaps = by_id(&b, "snapshots", "snapshot-id");
    let new_snaps = by_id(&n, "snapshots", "snapshot-id");
    for snapshot in array(&n, "snapshots") {
        let id = id_text(snapshot, "snapshot-id");
        if id.as_ref().is_some_and(|id| !base_snaps.contains_key(id)) {
            updates.push(json!({"action": "add-snapshot", "snapshot": snapshot}));
        }
    }
    // Refs.
    for name in base_refs.keys().filter(|k| !new_refs.contains_key(*k)) {
        updates.push(json!({"action": "remove-snapshot-ref", "ref-name": name}));
    }
    for (name, r) in &new_refs {
        if base_refs.get(name) == Some(r) {
            continue;
        }
        let mut update = Map::new();
        update.insert("action".into(), json!("set-snapshot-ref"));
        update.insert("ref-name".into(), json!(name));
        for (key, value) in r {
            update.insert(key.clone(), value.clone());
        }
        updates.push(Value::Object(update));
    }
    // Statistics, before `remove-snapshots`: servers differ in whether removing a snapshot drops
    // its statistics (Java: both kinds; pyiceberg 0.12: `statistics` only), and removing them
    // while the snapshot still exists is valid on every server.
    for (key, set_type, remove_type) in [
        ("statistics", "set-statistics", "remove-statistics"),
        (
            "partition-statistics",
            "set-partition-statistics",
            "remove-partition-statistics",
        ),
    ] {
        let before = by_id(&b, key, "snapshot-id");
        let after = by_id(&n, key, "snapshot-id");
        for (id, entry) in &after {
            if before.get(id) != Some(entry) {
                let mut update = json!({"action": set_type});
                update[if key == "statistics" {
                    "statistics"
                } else {
                    "partition-statistics"
                }] = (*entry).clone();
                if key == "statistics" {
                    update["snapshot-id"] = entry.get("snapshot-id").cloned().unwrap_or_default();
                }
                updates.push(update);
            }
        }
        for (id, entry) in &before {
            if !after.contains_key(id) {
                updates.push(json!({
                    "action": remove_type,
                    "snapshot-id": entry.get("snapshot-id").cloned().unwrap_or_default(),
                }));
            }
        }
    }
    let removed: Vec<Value> = array(&b, "snapshots")
        .iter()
        .filter(|s| id_text(s, "snapshot-id").is_some_and(|id| !new_snaps.contains_key(&id)))
        .filter_map(|s| s.get("snapshot-id").cloned())
        .collect();
    if !removed.is_empty() {
        updates.push(json!({"action": "remove-snapshots", "snapshot-ids": removed}));
    }

    // Properties.
    let base_props = base.properties();
    let new_props = new.properties();
    let set: BTreeMap<&String, &String> = new_props
        .iter()
        .filter(|(k, v)| base_props.get(*k) != Some(*v))
        .collect();
    if !set.is_empty() {
        updates.push(json!({"action": "set-properties", "updates": set}));
    }
    let gone: Vec<&String> = base_props
        .keys()
        .filter(|k| !new_props.contains_key(*k))
        .collect();
    if !gone.is_empty() {
        updates.push(json!({"action": "remove-properties", "removals": gone}));
    }

    // Schemas and partition specs: removals only.
    removed_ids(&b, &n, "schemas", "schema-id", |ids| {
        requirements.push(json!({
            "type": "assert-current-schema-id",
            "current-schema-id": b.get("current-schema-id").cloned().unwrap_or(Value::Null),
        }));
        updates.push(json!({"action": "remove-schemas", "schema-ids": ids}));
    })?;
    removed_ids(&b, &n, "partition-specs", "spec-id", |ids| {
        requirements.push(json!({
            "type": "assert-default-spec-id",
            "default-spec-id": b.get("default-spec-id").cloned().unwrap_or(Value::Null),
        }));
        updates.push(json!({"action": "remove-partition-specs", "spec-ids": ids}));
    })?;

    Ok(RestChanges {
        requirements,
        updates,
    })
}

/// The same updates with `remove-snapshots` split into one update per snapshot id (for servers
/// that answer 400 to a list).
pub fn split_remove_snapshots(changes: &RestChanges) -> Option<RestChanges> {
    let mut split = false;
    let mut updates = Vec::new();
    for update in &changes.updates {
        match update.get("snapshot-ids").and_then(Value::as_array) {
            Some(ids) if update["action"] == "remove-snapshots" && ids.len() > 1 => {
                split = true;
                for id in ids {
                    updates.push(json!({"action": "remove-snapshots", "snapshot-ids": [id]}));
                }
            }
            _ => updates.push(update.clone()),
        }
    }
    split.then(|| RestChanges {
        requirements: changes.requirements.clone(),
        updates,
    })
}

fn refuse_unhandled(b: &Map<String, Value>, n: &Map<String, Value>) -> Result<()> {
    let keys: BTreeSet<&String> = b.keys().chain(n.keys()).collect();
    for key in keys {
        if HANDLED.contains(&key.as_str()) {
            continue;
        }
        if b.get(key) != n.get(key) {
            return Err(Error::not_implemented(format!(
                "A REST catalog commit cannot carry a change of '{key}' (icetrim sends snapshot, \
                 ref, property, statistics updates and schema/spec removals)"
            )));
        }
    }
    // Schemas and specs may only lose entries.
    for (key, id) in [("schemas", "schema-id"), ("partition-specs", "spec-id")] {
        let before = by_id(b, key, id);
        for (i, entry) in by_id(n, key, id) {
            if before.get(&i) != Some(&entry) {
                return Err(Error::not_implemented(format!(
                    "A REST catalog commit cannot add or change {key} (entry {id} {i})"
                )));
            }
        }
    }
    Ok(())
}

fn removed_ids(
    b: &Map<String, Value>,
    n: &Map<String, Value>,
    key: &str,
    id: &str,
    mut push: impl FnMut(Vec<Value>),
) -> Result<()> {
    let after = by_id(n, key, id);
    let removed: Vec<Value> = array(b, key)
        .iter()
        .filter(|e| id_text(e, id).is_some_and(|i| !after.contains_key(&i)))
        .filter_map(|e| e.get(id).cloned())
        .collect();
    if !removed.is_empty() {
        push(removed);
    }
    Ok(())
}

fn array<'a>(doc: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    doc.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// An id member as text (numbers keep their JSON text with `arbitrary_precision`).
fn id_text(entry: &Value, key: &str) -> Option<String> {
    entry.get(key).map(Value::to_string)
}

fn by_id<'a>(doc: &'a Map<String, Value>, key: &str, id: &str) -> BTreeMap<String, &'a Value> {
    array(doc, key)
        .iter()
        .filter_map(|e| Some((id_text(e, id)?, e)))
        .collect()
}

/// The refs of a document; a v1 document without `refs` has an implicit `main` on
/// `current-snapshot-id`.
fn refs_of(doc: &Map<String, Value>) -> BTreeMap<String, Map<String, Value>> {
    match doc.get("refs").and_then(Value::as_object) {
        Some(refs) => refs
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_object()?.clone())))
            .collect(),
        None => match doc.get("current-snapshot-id") {
            Some(id) if !id.is_null() && id.as_i64() != Some(-1) => {
                let mut main = Map::new();
                main.insert("snapshot-id".into(), id.clone());
                main.insert("type".into(), json!("branch"));
                BTreeMap::from([("main".to_string(), main)])
            }
            _ => BTreeMap::new(),
        },
    }
}

/// Per-statement tests of the snapshot, ref and property statements' metadata changes.
#[cfg(test)]
#[path = "diff_statements.rs"]
mod statement_tests;

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn doc(snapshots: &[i64], refs: Value, props: Value, extra: Value) -> TableMetadata {
        let snaps: Vec<Value> = snapshots
            .iter()
            .map(|id| {
                json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": 1000 * id,
                       "manifest-list": format!("/t/metadata/snap-{id}.avro"),
                       "summary": {"operation": "append"}})
            })
            .collect();
        let mut m = json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "/t", "last-sequence-number": 9, "last-updated-ms": 5000,
            "last-column-id": 1, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": props, "current-snapshot-id": snapshots.last().copied().unwrap_or(-1),
            "snapshots": snaps, "refs": refs, "snapshot-log": [], "metadata-log": []
        });
        if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                m.insert(k.clone(), v.clone());
            }
        }
        let bytes = serde_json::to_vec(&m).unwrap();
        TableMetadata::parse(&bytes, "v1.metadata.json").unwrap()
    }

    pub(super) fn types(changes: &RestChanges) -> Vec<String> {
        changes
            .updates
            .iter()
            .map(|u| u["action"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn expiry_removes_snapshots_in_one_update_and_asserts_every_ref() {
        let refs = json!({"main": {"snapshot-id": 3, "type": "branch"},
                          "t1": {"snapshot-id": 1, "type": "tag"}});
        let base = doc(&[1, 2, 3], refs, json!({}), json!({}));
        let new = doc(
            &[3],
            json!({"main": {"snapshot-id": 3, "type": "branch"}}),
            json!({}),
            json!({}),
        );
        let changes = rest_changes(&base, &new).unwrap();
        assert_eq!(types(&changes), ["remove-snapshot-ref", "remove-snapshots"]);
        assert_eq!(changes.updates[0]["ref-name"], "t1");
        assert_eq!(changes.updates[1]["snapshot-ids"], json!([1, 2]));
        assert_eq!(
            changes.requirements,
            vec![
                json!({"type": "assert-table-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"}),
                json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3}),
                json!({"type": "assert-ref-snapshot-id", "ref": "t1", "snapshot-id": 1}),
            ]
        );
        let split = split_remove_snapshots(&changes).unwrap();
        assert_eq!(
            types(&split),
            [
                "remove-snapshot-ref",
                "remove-snapshots",
                "remove-snapshots"
            ]
        );
        assert_eq!(split.updates[2]["snapshot-ids"], json!([2]));
        assert!(split_remove_snapshots(&split).is_none());
    }

    #[test]
    fn new_snapshots_refs_and_properties() {
        let base = doc(
            &[1],
            json!({"main": {"snapshot-id": 1, "type": "branch"}}),
            json!({"a": "1", "b": "2"}),
            json!({}),
        );
        let new = doc(
            &[1, 2],
            json!({"main": {"snapshot-id": 2, "type": "branch"},
                   "audit": {"snapshot-id": 1, "type": "branch", "min-snapshots-to-keep": 2}}),
            json!({"a": "9", "c": "3"}),
            json!({}),
        );
        let changes = rest_changes(&base, &new).unwrap();
        assert_eq!(
            types(&changes),
            [
                "add-snapshot",
                "set-snapshot-ref",
                "set-snapshot-ref",
                "set-properties",
                "remove-properties"
            ]
        );
        assert_eq!(changes.updates[0]["snapshot"]["snapshot-id"], 2);
        let audit = &changes.updates[1];
        assert_eq!(audit["ref-name"], "audit");
        assert_eq!(audit["min-snapshots-to-keep"], 2);
        assert_eq!(audit["action"], "set-snapshot-ref");
        assert_eq!(changes.updates[2]["ref-name"], "main");
        assert_eq!(changes.updates[3]["updates"], json!({"a": "9", "c": "3"}));
        assert_eq!(changes.updates[4]["removals"], json!(["b"]));
        assert!(changes.requirements.contains(
            &json!({"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": null})
        ));
    }

    #[test]
    fn statistics_and_schema_removal() {
        let stats = |id: i64| {
            json!({"snapshot-id": id, "statistics-path": format!("/t/s{id}.puffin"),
                                     "file-size-in-bytes": 10, "file-footer-size-in-bytes": 5,
                                     "blob-metadata": []})
        };
        let pstats = |id: i64| {
            json!({"snapshot-id": id, "statistics-path": format!("/t/p{id}.parquet"),
                                      "file-size-in-bytes": 10})
        };
        let two_schemas = json!({"schemas": [{"type": "struct", "schema-id": 0, "fields": []},
                                              {"type": "struct", "schema-id": 1, "fields": []}],
                                 "statistics": [stats(1), stats(2)],
                                 "partition-statistics": [pstats(1)]});
        let base = doc(
            &[1, 2],
            json!({"main": {"snapshot-id": 2, "type": "branch"}}),
            json!({}),
            two_schemas,
        );
        let new = doc(
            &[1, 2],
            json!({"main": {"snapshot-id": 2, "type": "branch"}}),
            json!({}),
            json!({"statistics": [stats(2)], "partition-statistics": [pstats(1), pstats(2)]}),
        );
        let changes = rest_changes(&base, &new).unwrap();
        assert_eq!(
            types(&changes),
            [
                "remove-statistics",
                "set-partition-statistics",
                "remove-schemas"
            ]
        );
        assert_eq!(changes.updates[2]["schema-ids"], json!([1]));
        assert_eq!(changes.updates[0]["snapshot-id"], 1);
        assert_eq!(changes.updates[1]["partition-statistics"], pstats(2));
        assert!(
            changes
                .requirements
                .contains(&json!({"type": "assert-current-schema-id", "current-schema-id": 0}))
        );
    }

    #[test]
    fn statistics_of_removed_snapshots_go_with_them() {
        let stats = json!({"snapshot-id": 1, "statistics-path": "/t/s1.puffin",
                           "file-size-in-bytes": 10, "file-footer-size-in-bytes": 5, "blob-metadata": []});
        let refs = json!({"main": {"snapshot-id": 2, "type": "branch"}});
        let base = doc(
            &[1, 2],
            refs.clone(),
            json!({}),
            json!({"statistics": [stats]}),
        );
        let new = doc(&[2], refs, json!({}), json!({"statistics": []}));
        let changes = rest_changes(&base, &new).unwrap();
        assert_eq!(types(&changes), ["remove-statistics", "remove-snapshots"]);
    }

    #[test]
    fn nothing_changed_is_empty_and_unknown_changes_are_refused() {
        let refs = json!({"main": {"snapshot-id": 1, "type": "branch"}});
        let base = doc(&[1], refs.clone(), json!({}), json!({}));
        let same = doc(
            &[1],
            refs.clone(),
            json!({}),
            json!({"last-updated-ms": 9999}),
        );
        assert!(rest_changes(&base, &same).unwrap().is_empty());
        let moved = doc(&[1], refs, json!({}), json!({"location": "/elsewhere"}));
        let e = rest_changes(&base, &moved).unwrap_err();
        assert!(e.message().contains("'location'"), "{e}");
    }
}
