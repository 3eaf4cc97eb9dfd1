#!/usr/bin/env python3
"""The test oracle: what real pyiceberg and real ClickHouse (chdb) say about a table. JSON on stdout.

usage:
  oracle.py inspect <metadata_json_path>
  oracle.py clickhouse <table_dir> <sql> [<sql> ...]

`inspect` reads the table with pyiceberg's StaticTable: snapshots, refs, for every ref the files
`scan(snapshot_id).plan_files()` plans (data files and their delete files), for every snapshot the
live (ADDED/EXISTING) entries of its manifests, counts from `inspect.entries()` and
`inspect.manifests()`, the row count of `scan().to_arrow()` for main, the statistics and
partition-statistics files, and `missing`: every referenced file (manifest lists, manifests, live
entries of every snapshot, statistics files) absent from disk. Paths are local absolute paths
(`file://` stripped). A part pyiceberg cannot answer (e.g. planning after a data file was deleted)
goes into an `errors` map instead of failing the whole report; `missing` is always computed.

`clickhouse` attaches `<table_dir>` as table `t` (ENGINE = IcebergLocal) in one chdb session, runs the
statements in order and prints `{"ok": true, "columns": [...], "rows": [[text, ...], ...]}` for the
last one, or `{"ok": false, "code": N, "error": "...", "statement": i}` for the first that fails.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))

import chdb_session  # noqa: E402


def local_path(uri: str) -> str:
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix):
            return uri[len(prefix) :]
    return uri


def _content_name(content) -> str:
    return {0: "data", 1: "position_delete", 2: "equality_delete"}.get(int(content), str(content))


def _snapshot_entries(table, snapshot):
    """Live entries of one snapshot's manifests, read without planning; a missing manifest list or
    manifest is skipped (the `missing` check reports it)."""
    io = table.io
    manifests = []
    files = []
    if not os.path.exists(local_path(snapshot.manifest_list)):
        return {"manifest_list": local_path(snapshot.manifest_list), "manifests": [], "files": []}
    for manifest in snapshot.manifests(io):
        manifests.append(local_path(manifest.manifest_path))
        if not os.path.exists(local_path(manifest.manifest_path)):
            continue
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            files.append(
                {
                    "path": local_path(entry.data_file.file_path),
                    "content": _content_name(entry.data_file.content),
                    "status": int(entry.status),
                    "records": entry.data_file.record_count,
                }
            )
    files.sort(key=lambda f: f["path"])
    return {"manifest_list": local_path(snapshot.manifest_list), "manifests": sorted(manifests), "files": files}


def _planned_files(table, snapshot_id):
    data, deletes = set(), set()
    for task in table.scan(snapshot_id=snapshot_id).plan_files():
        data.add(local_path(task.file.file_path))
        deletes.update(local_path(d.file_path) for d in task.delete_files)
    return {"data": sorted(data), "deletes": sorted(deletes)}


def _guard(report, key, compute):
    try:
        report[key] = compute()
    except Exception as exc:  # the oracle reports what pyiceberg cannot do
        report.setdefault("errors", {})[key] = f"{type(exc).__name__}: {exc}"


def inspect(metadata_path: str) -> dict:
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_path)
    meta = table.metadata
    report = {
        "metadata_path": metadata_path,
        "format_version": int(meta.format_version),
        "location": meta.location,
        "current_snapshot_id": meta.current_snapshot_id,
        "properties": dict(meta.properties),
        "snapshots": [
            {
                "id": s.snapshot_id,
                "parent": s.parent_snapshot_id,
                "ts": s.timestamp_ms,
                "operation": s.summary.operation.value if s.summary else None,
                "manifest_list": local_path(s.manifest_list),
            }
            for s in meta.snapshots
        ],
        "snapshot_log": [{"id": e.snapshot_id, "ts": e.timestamp_ms} for e in meta.snapshot_log],
        "metadata_log": [{"file": local_path(e.metadata_file), "ts": e.timestamp_ms} for e in meta.metadata_log],
        "statistics": [
            {"snapshot": st.snapshot_id, "path": local_path(st.statistics_path)} for st in meta.statistics
        ],
        "partition_statistics": [
            {"snapshot": st.snapshot_id, "path": local_path(st.statistics_path)} for st in meta.partition_statistics
        ],
        "refs": {
            name: {
                "type": ref.snapshot_ref_type.value,
                "snapshot": ref.snapshot_id,
                "min_snapshots_to_keep": ref.min_snapshots_to_keep,
                "max_snapshot_age_ms": ref.max_snapshot_age_ms,
                "max_ref_age_ms": ref.max_ref_age_ms,
            }
            for name, ref in meta.refs.items()
        },
    }
    _guard(report, "ref_files", lambda: {n: _planned_files(table, r.snapshot_id) for n, r in meta.refs.items()})
    _guard(report, "snapshot_files", lambda: {str(s.snapshot_id): _snapshot_entries(table, s) for s in meta.snapshots})
    if meta.current_snapshot_id is not None:
        _guard(report, "entries_count", lambda: table.inspect.entries().num_rows)
        _guard(report, "manifests_count", lambda: table.inspect.manifests().num_rows)
        _guard(report, "rows_main", lambda: table.scan().to_arrow().num_rows)
    else:
        report.update(entries_count=0, manifests_count=0, rows_main=0)
    report["missing"] = _missing(report)
    return report


def _missing(report) -> list:
    referenced = set()
    for snapshot in report.get("snapshot_files", {}).values():
        referenced.add(snapshot["manifest_list"])
        referenced.update(snapshot["manifests"])
        referenced.update(f["path"] for f in snapshot["files"])
    for snapshot in report["snapshots"]:
        referenced.add(snapshot["manifest_list"])
    for key in ("statistics", "partition_statistics"):
        referenced.update(st["path"] for st in report[key])
    return sorted(p for p in referenced if not os.path.exists(p))


CODE = re.compile(r"Code: (\d+)\.")


def clickhouse(table_dir: str, statements: list) -> dict:
    sess = chdb_session.open_session()
    try:
        chdb_session.run(sess, chdb_session.attach_statement(table_dir))
        columns, rows = [], []
        for index, sql in enumerate(statements):
            try:
                columns, rows = chdb_session.run(sess, sql)
            except Exception as exc:
                text = str(exc)
                match = CODE.search(text)
                return {"ok": False, "code": int(match.group(1)) if match else None, "error": text, "statement": index}
        return {"ok": True, "columns": columns, "rows": rows}
    finally:
        sess.close()


def main(argv) -> int:
    if len(argv) == 2 and argv[0] == "inspect":
        result = inspect(argv[1])
    elif len(argv) >= 3 and argv[0] == "clickhouse":
        result = clickhouse(os.path.abspath(argv[1]), argv[2:])
    else:
        sys.stderr.write(__doc__)
        return 2
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
