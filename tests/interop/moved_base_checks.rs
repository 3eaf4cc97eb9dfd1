//! What the moved-base tests check (see `moved_base.rs`): every snapshot as pyiceberg reads it,
//! the current rows as ClickHouse reads them, the files a statement left behind, and the REST
//! catalog's own refusal after a format version upgrade.

use icetrim::engine::QueryResult;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::plan::ProcedureCall;
use serde_json::Value;

use crate::moved_base::{Injection, Kind, Listing, Moved};

/// `tests/py/moved_base.py state`.
#[derive(Debug)]
pub(crate) struct State(pub Value);

impl State {
    pub fn current(&self) -> i64 {
        self.0["current"].as_i64().expect("a current snapshot")
    }

    pub fn format_version(&self) -> i64 {
        self.0["format_version"].as_i64().expect("a format version")
    }

    fn snapshot(&self, id: i64) -> &Value {
        let s = &self.0["snapshots"][id.to_string()];
        assert!(s.is_object(), "no snapshot {id}: {}", self.0);
        assert!(s.get("error").is_none(), "pyiceberg, snapshot {id}: {s}");
        s
    }

    /// The ids pyiceberg reads in snapshot `id`.
    pub fn ids(&self, id: i64) -> Vec<i64> {
        self.snapshot(id)["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_i64().expect("an id"))
            .collect()
    }

    pub fn parent(&self, id: i64) -> Option<i64> {
        self.snapshot(id)["parent"].as_i64()
    }

    pub fn operation(&self, id: i64) -> String {
        self.snapshot(id)["operation"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Snapshot ids with operation `replace`.
    pub fn replaces(&self) -> Vec<i64> {
        let mut out: Vec<i64> = self.0["snapshots"]
            .as_object()
            .expect("snapshots")
            .iter()
            .filter(|(_, s)| s["operation"] == "replace")
            .map(|(id, _)| id.parse().expect("an id"))
            .collect();
        out.sort_unstable();
        out
    }

    /// Every `replace` snapshot reads exactly its parent's rows (pyiceberg, by snapshot id), and
    /// ClickHouse reads the current snapshot's rows.
    pub fn assert_consistent(&self, what: &str) {
        for id in self.replaces() {
            let parent = self.parent(id).expect("a replace has a parent");
            assert_eq!(
                self.ids(id),
                self.ids(parent),
                "{what}: replace snapshot {id} reads other rows than its parent {parent}"
            );
        }
        let ch = &self.0["clickhouse"];
        assert!(ch.get("error").is_none(), "{what}: ClickHouse: {ch}");
        let ch_ids: Vec<i64> = ch["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_i64().expect("an id"))
            .collect();
        assert_eq!(
            ch_ids,
            self.ids(self.current()),
            "{what}: ClickHouse reads the current snapshot's rows"
        );
    }
}

/// The files added between `before` and now are exactly the other writer's (`injected`: the
/// listings around its commit): everything the statement wrote is gone.
pub(crate) async fn assert_only_theirs_added(
    moved: &Moved,
    before: &Listing,
    injected: &(Listing, Listing),
    what: &str,
) {
    let theirs: Listing = injected.1.difference(&injected.0).cloned().collect();
    let ours: Listing = injected.0.difference(before).cloned().collect();
    assert!(
        !ours.is_empty(),
        "{what}: the statement wrote files before its commit"
    );
    let now = moved.writer.files().await;
    let added: Listing = now.difference(before).cloned().collect();
    let left: Vec<&String> = added.difference(&theirs).collect();
    assert!(
        left.is_empty(),
        "{what}: files the statement wrote and never committed are left: {left:?} (it wrote \
         {ours:?})"
    );
}

/// The warnings of `r`, joined (for messages).
pub(crate) fn warnings_of(r: &QueryResult) -> String {
    r.warnings.join(" | ")
}

/// The snapshot ids of `md`, in file order.
pub(crate) fn snapshot_ids(md: &TableMetadata) -> Vec<i64> {
    md.snapshots().iter().map(|s| s.snapshot_id).collect()
}

/// REST, `call` with a v2 → v3 upgrade injected: the catalog applies our updates on its newest
/// metadata (no REST requirement covers the format version) and refuses a snapshot without row
/// lineage on a v3 table (HTTP 400), so nothing is committed. The test catalog (pyiceberg 0.12)
/// cannot serve a v3 table to readers at all, so the check is that no metadata file followed the
/// upgrade's.
pub(crate) async fn rest_refuses_the_v2_snapshot(call: ProcedureCall) {
    let moved = Moved::new(Kind::Rest).await;
    let (result, injected) = moved.run(call, Injection::UpgradeV3).await;
    let (_, upgraded) = injected.expect("the injection ran");
    let e = result.expect_err("the catalog refuses the v2 snapshot");
    assert!(
        e.message().contains("HTTP 400") && e.message().contains("first row id"),
        "{e}"
    );
    let now = moved.writer.files().await;
    let committed: Vec<&String> = now
        .difference(&upgraded)
        .filter(|f| f.ends_with(".metadata.json"))
        .collect();
    assert!(committed.is_empty(), "nothing committed: {committed:?}");
}
