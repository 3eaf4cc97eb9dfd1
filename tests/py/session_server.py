#!/usr/bin/env python3
"""One long-lived Python for a test that builds several fixtures and asks the oracle many times:
importing pyiceberg and pyarrow takes seconds, a request then takes a fraction of one.

Reads one JSON request per line on stdin, answers one JSON line on stdout:
  {"op": "build", "argv": [<make_table.py arguments>]}      -> {"ok": true, "result": <facts>}
  {"op": "inspect", "path": "<metadata json>"}               -> {"ok": true, "result": <oracle report>}
  {"op": "clickhouse", "dir": "<table dir>", "statements": [...]}
                                                             -> {"ok": true, "result": <oracle reply>}
  {"op": "catalog_read", "catalog": {"type": "rest", "uri", "warehouse"} | {"type": "glue"},
   "s3": "<endpoint>", "namespace": "<ns>", "table": "<t>"}
                                                             -> {"ok": true, "result": {"refs":
      {ref: [snapshot id, rows]}, "current": <snapshot id>}}: pyiceberg loads the table through
      the catalog (RestCatalog or GlueCatalog, S3 keys `testing`) and scans every branch and tag.
  {"op": "snapshot_digests", "table": {...}, "s3", "bucket", "snapshots": [ids]}
                                                             -> {"ok": true, "result": {id: {"py":
      [rows, digest], "ch": [rows, sum of cityHash64]}}}: see `snapshot_digests.py`.
A request that fails answers {"ok": false, "error": "<traceback>"}. Anything a library prints goes to
stderr, so stdout carries only answers. The answers are those of `scripts/fixtures/make_table.py`
and `tests/py/oracle.py`, which this calls in-process.
"""

import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))


def handle(request):
    op = request.get("op")
    if op == "build":
        import make_table

        return make_table.build(request["argv"])
    if op == "inspect":
        import oracle

        return oracle.inspect(request["path"])
    if op == "clickhouse":
        import oracle

        return oracle.clickhouse(os.path.abspath(request["dir"]), request["statements"])
    if op == "catalog_read":
        return catalog_read(request)
    if op == "snapshot_digests":
        import snapshot_digests

        return snapshot_digests.digests(request)
    raise ValueError(f"unknown op {op!r}")


def catalog_read(request):
    from pyiceberg.catalog import load_catalog

    spec = request["catalog"]
    s3 = request["s3"]
    if spec["type"] == "glue":
        import glue_fixture

        catalog = glue_fixture.catalog(s3, s3)
    else:
        catalog = load_catalog(
            "rest",
            **{
                "type": "rest",
                "uri": spec["uri"],
                "warehouse": spec["warehouse"],
                "s3.endpoint": s3,
                "s3.access-key-id": "testing",
                "s3.secret-access-key": "testing",
                "s3.region": "us-east-1",
            },
        )
    table = catalog.load_table((*request["namespace"].split("."), request["table"]))
    refs = {}
    for name, ref in table.metadata.refs.items():
        rows = table.scan(snapshot_id=ref.snapshot_id).to_arrow().num_rows
        refs[name] = [ref.snapshot_id, rows]
    return {"refs": refs, "current": table.metadata.current_snapshot_id}


def main():
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = {"ok": True, "result": handle(json.loads(line))}
        except BaseException:  # noqa: BLE001 - every failure is an answer, the server keeps serving
            reply = {"ok": False, "error": traceback.format_exc()}
        answers.write(json.dumps(reply, sort_keys=True) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
