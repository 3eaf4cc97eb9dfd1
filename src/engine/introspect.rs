//! Rows of the introspection tables, read from each registered table's newest metadata:
//!
//! - `system.iceberg_history` — ClickHouse's columns: `database`, `table`, `made_current_at`
//!   (the last `snapshot-log` time of the snapshot, NULL if never current), `snapshot_id`,
//!   `parent_id` (0 when none, as ClickHouse's UInt64 column), `is_current_ancestor`,
//!   `operation`, `summary`;
//! - `system.iceberg_snapshots` — one row per snapshot with what expiry looks at: sequence number,
//!   time, operation, manifest list, whether it is current, and which refs point at it;
//! - `system.iceberg_refs` — one row per branch or tag with its retention fields.
//!
//! Times print as `DateTime64(3)` in the session time zone.

use std::collections::{HashMap, HashSet};

use super::registry::TableDef;
use super::runtime::Runtime;
use super::table::open_table;
use crate::error::Result;
use crate::format::{Column, Value};
use crate::iceberg::locate::locate;
use crate::iceberg::metadata::TableMetadata;
use crate::settings::Settings;
use crate::sql::select::SystemTable;
use crate::sql::timestamp::SessionTimeZone;

/// Every row of `table` over the registered tables `defs` (filtering, ordering and limits are the
/// caller's).
pub async fn system_table_rows(
    runtime: &Runtime,
    settings: &Settings,
    table: SystemTable,
    defs: &[TableDef],
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let zone = settings.session_time_zone();
    let mut rows = Vec::new();
    for def in defs {
        let target = open_table(runtime, settings, def)?;
        target.check_single_table("SELECT", false).await?;
        let located = locate(&target.io, &target.location, &target.metadata_settings)
            .await
            .map_err(|e| e.context(format!("table {}", target.table_name)))?;
        let m = &located.metadata;
        let head = [
            Value::from(def.database.as_str()),
            Value::from(def.name.as_str()),
        ];
        match table {
            SystemTable::IcebergHistory => history_rows(m, &zone, &head, &mut rows),
            SystemTable::IcebergSnapshots => snapshot_rows(m, &zone, &head, &mut rows),
            SystemTable::IcebergRefs => ref_rows(m, &zone, &head, &mut rows),
        }
    }
    Ok((columns(table), rows))
}

/// The rows of `table` for one opened `target` (a catalog table), named `database`.`name`.
pub async fn target_rows(
    settings: &Settings,
    table: SystemTable,
    target: &crate::maintain::target::MaintenanceTarget,
    (database, name): (&str, &str),
    rows: &mut Vec<Vec<Value>>,
) -> Result<()> {
    let zone = settings.session_time_zone();
    let located = target.locate_newest("SELECT").await?;
    let m = &located.metadata;
    let head = [Value::from(database), Value::from(name)];
    match table {
        SystemTable::IcebergHistory => history_rows(m, &zone, &head, rows),
        SystemTable::IcebergSnapshots => snapshot_rows(m, &zone, &head, rows),
        SystemTable::IcebergRefs => ref_rows(m, &zone, &head, rows),
    }
    Ok(())
}

/// The columns of `table`.
pub fn columns(table: SystemTable) -> Vec<Column> {
    let mut cols = vec![
        Column::new("database", "String"),
        Column::new("table", "String"),
    ];
    let rest: &[(&str, &str)] = match table {
        SystemTable::IcebergHistory => &[
            ("made_current_at", "Nullable(DateTime64(3))"),
            ("snapshot_id", "UInt64"),
            ("parent_id", "UInt64"),
            ("is_current_ancestor", "UInt8"),
            ("operation", "String"),
            ("summary", "Map(String, String)"),
        ],
        SystemTable::IcebergSnapshots => &[
            ("snapshot_id", "Int64"),
            ("parent_id", "Nullable(Int64)"),
            ("sequence_number", "Int64"),
            ("timestamp", "DateTime64(3)"),
            ("operation", "String"),
            ("manifest_list", "String"),
            ("is_current", "UInt8"),
            ("is_current_ancestor", "UInt8"),
            ("refs", "String"),
        ],
        SystemTable::IcebergRefs => &[
            ("name", "String"),
            ("type", "String"),
            ("snapshot_id", "Int64"),
            ("snapshot_timestamp", "Nullable(DateTime64(3))"),
            ("min_snapshots_to_keep", "Nullable(Int64)"),
            ("max_snapshot_age_ms", "Nullable(Int64)"),
            ("max_ref_age_ms", "Nullable(Int64)"),
        ],
    };
    cols.extend(rest.iter().map(|(n, t)| Column::new(*n, *t)));
    cols
}

/// Snapshot ids on the current snapshot's parent chain (cycle-safe).
fn current_ancestors(m: &TableMetadata) -> HashSet<i64> {
    let parents: HashMap<i64, Option<i64>> = m
        .snapshots()
        .iter()
        .map(|s| (s.snapshot_id, s.parent_snapshot_id))
        .collect();
    let mut seen = HashSet::new();
    let mut next = m.current_snapshot_id();
    while let Some(id) = next {
        if !parents.contains_key(&id) || !seen.insert(id) {
            break;
        }
        next = parents.get(&id).copied().flatten();
    }
    seen
}

fn operation_upper(op: Option<&str>) -> String {
    match op {
        Some(op @ ("append" | "overwrite" | "delete" | "replace")) => op.to_ascii_uppercase(),
        _ => "UNKNOWN".to_string(),
    }
}

/// A `Map(String, String)` as ClickHouse prints it: `{'k':'v',...}`.
fn map_text<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let parts: Vec<String> = entries
        .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

fn history_rows(
    m: &TableMetadata,
    zone: &SessionTimeZone,
    head: &[Value; 2],
    rows: &mut Vec<Vec<Value>>,
) {
    let ancestors = current_ancestors(m);
    let made_current: HashMap<i64, i64> = m
        .snapshot_log()
        .iter()
        .map(|e| (e.snapshot_id, e.timestamp_ms))
        .collect();
    for s in m.snapshots() {
        let mut row = head.to_vec();
        row.push(
            made_current
                .get(&s.snapshot_id)
                .map_or(Value::Null, |ts| Value::Str(zone.format_ms(*ts))),
        );
        row.push(Value::UInt(s.snapshot_id as u64));
        row.push(Value::UInt(s.parent_snapshot_id.map_or(0, |p| p as u64)));
        row.push(Value::UInt(u64::from(ancestors.contains(&s.snapshot_id))));
        row.push(Value::Str(operation_upper(s.operation())));
        row.push(Value::Str(map_text(s.summary.iter())));
        rows.push(row);
    }
}

fn snapshot_rows(
    m: &TableMetadata,
    zone: &SessionTimeZone,
    head: &[Value; 2],
    rows: &mut Vec<Vec<Value>>,
) {
    let ancestors = current_ancestors(m);
    let mut refs_of: HashMap<i64, Vec<&str>> = HashMap::new();
    for r in m.refs() {
        refs_of.entry(r.snapshot_id).or_default().push(&r.name);
    }
    for s in m.snapshots() {
        let mut row = head.to_vec();
        row.push(Value::Int(s.snapshot_id));
        row.push(s.parent_snapshot_id.map_or(Value::Null, Value::Int));
        row.push(Value::Int(s.sequence_number));
        row.push(Value::Str(zone.format_ms(s.timestamp_ms)));
        row.push(Value::Str(s.operation().unwrap_or("").to_string()));
        row.push(Value::Str(s.manifest_list.clone().unwrap_or_default()));
        row.push(Value::UInt(u64::from(
            m.current_snapshot_id() == Some(s.snapshot_id),
        )));
        row.push(Value::UInt(u64::from(ancestors.contains(&s.snapshot_id))));
        let mut names = refs_of.get(&s.snapshot_id).cloned().unwrap_or_default();
        names.sort_unstable();
        row.push(Value::Str(names.join(",")));
        rows.push(row);
    }
}

fn ref_rows(
    m: &TableMetadata,
    zone: &SessionTimeZone,
    head: &[Value; 2],
    rows: &mut Vec<Vec<Value>>,
) {
    for r in m.refs() {
        let mut row = head.to_vec();
        row.push(Value::Str(r.name.clone()));
        row.push(Value::Str(r.kind.as_str().to_string()));
        row.push(Value::Int(r.snapshot_id));
        row.push(
            m.snapshot(r.snapshot_id)
                .map_or(Value::Null, |s| Value::Str(zone.format_ms(s.timestamp_ms))),
        );
        row.push(
            r.min_snapshots_to_keep
                .map_or(Value::Null, |v| Value::Int(i64::from(v))),
        );
        row.push(r.max_snapshot_age_ms.map_or(Value::Null, Value::Int));
        row.push(r.max_ref_age_ms.map_or(Value::Null, Value::Int));
        rows.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn map_text_quotes_like_clickhouse() {
        let m = BTreeMap::from([
            ("operation".to_string(), "append".to_string()),
            ("k'".to_string(), "a\\b".to_string()),
        ]);
        let m = crate::iceberg::spec::Summary::from(m);
        assert_eq!(map_text(m.iter()), "{'k\\'':'a\\\\b','operation':'append'}");
    }

    #[test]
    fn operations_upper_or_unknown() {
        assert_eq!(operation_upper(Some("append")), "APPEND");
        assert_eq!(operation_upper(Some("weird")), "UNKNOWN");
        assert_eq!(operation_upper(None), "UNKNOWN");
    }

    #[test]
    fn every_row_matches_its_columns() {
        let json = br#"{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"/t",
            "last-sequence-number":2,"last-updated-ms":2000,"last-column-id":1,"current-schema-id":0,
            "schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,"type":"long"}]}],
            "default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,
            "default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{},
            "current-snapshot-id":2,
            "snapshots":[{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1000,"manifest-list":"/t/metadata/a.avro","summary":{"operation":"append"}},
                         {"snapshot-id":2,"parent-snapshot-id":1,"sequence-number":2,"timestamp-ms":2000,"manifest-list":"/t/metadata/b.avro","summary":{"operation":"delete"}}],
            "refs":{"main":{"snapshot-id":2,"type":"branch"},"t1":{"snapshot-id":1,"type":"tag","max-ref-age-ms":5}},
            "snapshot-log":[{"snapshot-id":1,"timestamp-ms":1000},{"snapshot-id":2,"timestamp-ms":2000}],
            "metadata-log":[]}"#;
        let m = TableMetadata::parse(json, "v2.metadata.json").unwrap();
        let zone = SessionTimeZone::Named(chrono_tz::UTC);
        let head = [Value::from("default"), Value::from("t")];
        for (table, expected_rows) in [
            (SystemTable::IcebergHistory, 2),
            (SystemTable::IcebergSnapshots, 2),
            (SystemTable::IcebergRefs, 2),
        ] {
            let mut rows = Vec::new();
            match table {
                SystemTable::IcebergHistory => history_rows(&m, &zone, &head, &mut rows),
                SystemTable::IcebergSnapshots => snapshot_rows(&m, &zone, &head, &mut rows),
                SystemTable::IcebergRefs => ref_rows(&m, &zone, &head, &mut rows),
            }
            assert_eq!(rows.len(), expected_rows);
            assert!(rows.iter().all(|r| r.len() == columns(table).len()));
        }
        let mut rows = Vec::new();
        history_rows(&m, &zone, &head, &mut rows);
        assert_eq!(rows[0][2], Value::Str("1970-01-01 00:00:01.000".into()));
        assert_eq!(rows[0][4], Value::UInt(0));
        assert_eq!(rows[1][5], Value::UInt(1));
        assert_eq!(rows[1][6], Value::Str("DELETE".into()));
    }
}
