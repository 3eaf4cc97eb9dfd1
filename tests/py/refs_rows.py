"""Read every ref of a table with pyiceberg and with ClickHouse (chdb), for the snapshot and ref
management tests. Prints JSON:
{"refs": {name: {"type", "snapshot_id", "min_snapshots_to_keep", "max_snapshot_age_ms",
 "max_ref_age_ms"}}, "inspect_refs": [{"name", "type", "snapshot_id", ...}],
 "current_snapshot_id", "summaries": {snapshot_id: {...}}, "parents": {snapshot_id: parent},
 "pyiceberg": {ref: [ids]}, "clickhouse": {ref: [ids] or "error text"}}.
Usage: python refs_rows.py TABLE_DIR METADATA_PATH
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "fixtures"))


def main(table_dir, metadata_path):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_path)
    meta = table.metadata
    out = {
        "current_snapshot_id": meta.current_snapshot_id,
        "refs": {
            name: {
                "type": ref.snapshot_ref_type.value,
                "snapshot_id": ref.snapshot_id,
                "min_snapshots_to_keep": ref.min_snapshots_to_keep,
                "max_snapshot_age_ms": ref.max_snapshot_age_ms,
                "max_ref_age_ms": ref.max_ref_age_ms,
            }
            for name, ref in meta.refs.items()
        },
        "summaries": {
            str(s.snapshot_id): dict(s.summary.additional_properties, operation=s.summary.operation.value)
            for s in meta.snapshots
        },
        "parents": {str(s.snapshot_id): s.parent_snapshot_id for s in meta.snapshots},
    }
    inspected = table.inspect.refs().to_pylist()
    out["inspect_refs"] = sorted(
        (
            {
                "name": r["name"],
                "type": r["type"],
                "snapshot_id": r["snapshot_id"],
                "max_reference_age_in_ms": r["max_reference_age_in_ms"],
                "min_snapshots_to_keep": r["min_snapshots_to_keep"],
                "max_snapshot_age_in_ms": r["max_snapshot_age_in_ms"],
            }
            for r in inspected
        ),
        key=lambda r: r["name"],
    )
    out["pyiceberg"] = {
        name: sorted(table.scan(snapshot_id=ref.snapshot_id).to_arrow().column("id").to_pylist())
        for name, ref in meta.refs.items()
    }
    import chdb_session

    sess = chdb_session.open_session()
    chdb_session.run(sess, chdb_session.attach_statement(table_dir))
    ch = {}
    for name, ref in meta.refs.items():
        try:
            _cols, rows = chdb_session.run(
                sess, f"SELECT id FROM t ORDER BY id SETTINGS iceberg_snapshot_id = {ref.snapshot_id}"
            )
            ch[name] = [int(r[0]) for r in rows]
        except Exception as exc:  # reported, the test decides
            ch[name] = f"{type(exc).__name__}: {exc}"
    out["clickhouse"] = ch
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
