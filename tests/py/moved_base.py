#!/usr/bin/env python3
"""The other writer and the readers of the moved-base tests (tests/interop/moved_base*.rs): a
table that moves between a compaction's (or manifest rewrite's) plan and its commit, on a path, in
the test REST catalog, or in moto's Glue. JSON on stdout.

The table is given as one JSON argument:
  {"kind": "path", "dir": D}                                      a path table (metadata/ under D)
  {"kind": "rest", "uri": U, "warehouse": W, "s3": S, "bucket": B} `ns.t` in the REST catalog
  {"kind": "glue", "endpoint": E, "database": DB}                 `DB.t` in Glue (moto: Glue and S3)

usage:
  moved_base.py rollback TABLE SNAPSHOT_ID   pyiceberg rolls `main` back (REST and Glue only)
  moved_base.py append TABLE ID              pyiceberg appends one row (ID, 'row-ID')
  moved_base.py state TABLE                  every snapshot read by pyiceberg by its id (parent,
                                             operation, sorted ids), the current snapshot, the
                                             format version, and the ids ClickHouse (chdb) reads
                                             for the current snapshot (or its error)
"""

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))

KEY = "testing"
REGION = "us-east-1"


def newest_metadata(location_dir):
    files = glob.glob(os.path.join(location_dir, "metadata", "*.metadata.json"))

    def version(path):
        name = os.path.basename(path)
        digits = name.lstrip("v").split("-")[0].split(".")[0]
        return int(digits) if digits.isdigit() else -1

    return max(files, key=version)


def load(table):
    kind = table["kind"]
    if kind == "path":
        from pyiceberg.table import StaticTable

        return StaticTable.from_metadata(newest_metadata(table["dir"]))
    if kind == "rest":
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog(
            "rest",
            **{
                "type": "rest",
                "uri": table["uri"],
                "warehouse": table["warehouse"],
                "s3.endpoint": table["s3"],
                "s3.access-key-id": KEY,
                "s3.secret-access-key": KEY,
                "s3.region": REGION,
            },
        )
        return catalog.load_table(("ns", "t"))
    if kind == "glue":
        from pyiceberg.catalog.glue import GlueCatalog

        catalog = GlueCatalog(
            "glue",
            **{
                "glue.endpoint": table["endpoint"],
                "glue.region": REGION,
                "glue.access-key-id": KEY,
                "glue.secret-access-key": KEY,
                "s3.endpoint": table["endpoint"],
                "s3.region": REGION,
                "s3.access-key-id": KEY,
                "s3.secret-access-key": KEY,
            },
        )
        return catalog.load_table(f"{table['database']}.t")
    raise SystemExit(f"unknown table kind {kind!r}")


def cmd_rollback(table, snapshot_id):
    t = load(table)
    t.manage_snapshots().rollback_to_snapshot(int(snapshot_id)).commit()
    return {"current": load(table).metadata.current_snapshot_id}


def cmd_append(table, first):
    import pyarrow as pa

    if table["kind"] == "path":
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog("other", uri="sqlite:///:memory:", warehouse="file://" + table["dir"])
        catalog.create_namespace("o")
        t = catalog.register_table("o.t", newest_metadata(table["dir"]))
    else:
        t = load(table)
    n = int(first)
    rows = pa.Table.from_pylist([{"id": n, "name": f"row-{n}"}], schema=t.schema().as_arrow())
    t.append(rows)
    return {"current": t.metadata.current_snapshot_id}


def clickhouse_ids(table):
    import chdb_session

    sess = chdb_session.open_session()
    try:
        kind = table["kind"]
        if kind == "path":
            chdb_session.run(sess, chdb_session.attach_statement(os.path.abspath(table["dir"])))
            name = "t"
        elif kind == "rest":
            sess.query("SET allow_database_iceberg = 1")
            sess.query(
                f"CREATE DATABASE lake ENGINE = DataLakeCatalog('{table['uri']}/v1') SETTINGS "
                f"catalog_type = 'rest', warehouse = '{table['warehouse']}', "
                f"storage_endpoint = '{table['s3']}/{table['bucket']}', aws_access_key_id = '{KEY}', "
                f"aws_secret_access_key = '{KEY}', region = '{REGION}', vended_credentials = 0"
            )
            name = "lake.`ns.t`"
        else:
            sess.query("SET allow_database_glue_catalog = 1")
            sess.query(
                f"CREATE DATABASE glue ENGINE = DataLakeCatalog('{table['endpoint']}') SETTINGS "
                f"catalog_type = 'glue', region = '{REGION}', aws_access_key_id = '{KEY}', "
                f"aws_secret_access_key = '{KEY}', storage_endpoint = '{table['endpoint']}'"
            )
            name = f"glue.`{table['database']}.t`"
        _, rows = chdb_session.run(sess, f"SELECT id FROM {name} ORDER BY id")
        return {"ids": [int(r[0]) for r in rows]}
    except Exception as e:  # noqa: BLE001 - reported, the test decides
        return {"error": str(e)[:800]}
    finally:
        sess.close()


def cmd_state(table):
    t = load(table)
    md = t.metadata
    snapshots = {}
    for snap in md.snapshots:
        entry = {
            "parent": snap.parent_snapshot_id,
            "operation": snap.summary.operation.value if snap.summary else None,
        }
        try:
            arrow = t.scan(snapshot_id=snap.snapshot_id).to_arrow()
            entry["ids"] = sorted(arrow.column("id").to_pylist())
        except Exception as e:  # noqa: BLE001 - reported, the test decides
            entry["error"] = f"{type(e).__name__}: {e}"
        snapshots[str(snap.snapshot_id)] = entry
    return {
        "current": md.current_snapshot_id,
        "format_version": md.format_version,
        "snapshots": snapshots,
        "clickhouse": clickhouse_ids(table),
    }


def main(argv):
    command, table, args = argv[0], json.loads(argv[1]), argv[2:]
    if command == "rollback":
        result = cmd_rollback(table, *args)
    elif command == "append":
        result = cmd_append(table, *args)
    elif command == "state":
        result = cmd_state(table)
    else:
        raise SystemExit(f"unknown command {command!r}")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
