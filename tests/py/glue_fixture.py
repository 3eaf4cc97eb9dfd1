#!/usr/bin/env python3
"""Iceberg tables in a Glue catalog, built and read by pyiceberg's own `GlueCatalog`, on the moto
server (Glue and S3 on one port: scripts/emulators.sh starts it).

    glue_fixture.py build  GLUE_ENDPOINT S3_ENDPOINT BUCKET PREFIX DATABASE TABLE NOW_MS
    glue_fixture.py read   GLUE_ENDPOINT S3_ENDPOINT DATABASE TABLE
    glue_fixture.py append GLUE_ENDPOINT S3_ENDPOINT DATABASE TABLE FIRST_ID COUNT
    glue_fixture.py clickhouse GLUE_ENDPOINT S3_ENDPOINT DATABASE TABLE   (chdb reads every ref)
    glue_fixture.py clickhouse_expire GLUE_ENDPOINT S3_ENDPOINT DATABASE TABLE 'YYYY-MM-DD hh:mm:ss'
                                        (chdb's own expire_snapshots, committed through Glue)
    glue_fixture.py hive   GLUE_ENDPOINT DATABASE TABLE        (a Glue table that is not Iceberg)
    glue_fixture.py dangling GLUE_ENDPOINT DATABASE TABLE LOCATION
                                        (an Iceberg table whose metadata_location storage lacks)

Each prints one JSON document. Credentials are moto's `testing`/`testing`, region us-east-1.

`build` creates the Glue database (if missing) and table `DATABASE.TABLE` at
`s3://BUCKET/PREFIX/TABLE` and commits a history on a fake clock (times relative to NOW_MS):
  a1 (10 d), a2 (9 d), a3 (8 d)                     appends of 3 rows each on main
  tag `t_a2` on a2                                 keeps a2 (and a1's file) reachable
  branch `audit` at a3, then b1 (7 d) on it         an append on the branch only
  x1 (7 d), del_x1 (7 d)                            rows 50, 51 appended on main and deleted again
  del_a1 (6 d)                                      deletes a1's rows on main (a1's file leaves main)
  a4 (1 h)                                          the current snapshot
With a 5-day retention an expiry removes a1, a3, x1, del_x1 and del_a1: x1's data file (live in
no retained snapshot) is deleted; a1's stays live through tag `t_a2` and branch `audit`. The facts: the metadata location, snapshot ids by
label, the refs, and the sorted ids of every ref's rows.

`read` loads the table through the catalog and scans every ref (branches and tags): the answer has
the metadata location, every snapshot id, and `rows` by ref name (sorted ids).
"""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
KEY = "testing"
REGION = "us-east-1"


def catalog(glue_endpoint, s3_endpoint):
    from pyiceberg.catalog.glue import GlueCatalog

    return GlueCatalog(
        "glue",
        **{
            "glue.endpoint": glue_endpoint,
            "glue.region": REGION,
            "glue.access-key-id": KEY,
            "glue.secret-access-key": KEY,
            "s3.endpoint": s3_endpoint,
            "s3.region": REGION,
            "s3.access-key-id": KEY,
            "s3.secret-access-key": KEY,
        },
    )


def _rows(first, count):
    import pyarrow as pa

    ids = list(range(first, first + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"row-{i}" for i in ids], pa.string()),
        }
    )


def build(glue_endpoint, s3_endpoint, bucket, prefix, database, table, now_ms):
    import fakeclock

    fakeclock.install(random.getrandbits(63))
    from fakeclock import CLOCK
    from pyiceberg.exceptions import NamespaceAlreadyExistsError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    cat = catalog(glue_endpoint, s3_endpoint)
    try:
        cat.create_namespace(database)
    except NamespaceAlreadyExistsError:
        pass
    location = f"s3://{bucket}/{prefix}/{table}"
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
    )
    CLOCK.set(now_ms - 10 * DAY_MS - HOUR_MS)
    t = cat.create_table(f"{database}.{table}", schema=schema, location=location)
    snapshots = {}

    def at(ms):
        CLOCK.set(ms)

    def head(branch="main"):
        return t.metadata.refs[branch].snapshot_id

    at(now_ms - 10 * DAY_MS)
    t.append(_rows(0, 3))
    snapshots["a1"] = head()
    at(now_ms - 9 * DAY_MS)
    t.append(_rows(3, 3))
    snapshots["a2"] = head()
    at(now_ms - 9 * DAY_MS + HOUR_MS)
    t.manage_snapshots().create_tag(snapshots["a2"], "t_a2").commit()
    at(now_ms - 8 * DAY_MS)
    t.append(_rows(6, 3))
    snapshots["a3"] = head()
    at(now_ms - 8 * DAY_MS + HOUR_MS)
    t.manage_snapshots().create_branch(snapshots["a3"], "audit").commit()
    at(now_ms - 7 * DAY_MS)
    t.append(_rows(100, 2), branch="audit")
    snapshots["b1"] = head("audit")
    at(now_ms - 7 * DAY_MS + HOUR_MS)
    t.append(_rows(50, 2))
    snapshots["x1"] = head()
    at(now_ms - 7 * DAY_MS + 2 * HOUR_MS)
    t.delete("id >= 50 and id < 60")
    snapshots["del_x1"] = head()
    at(now_ms - 6 * DAY_MS)
    t.delete("id < 3")
    snapshots["del_a1"] = head()
    at(now_ms - HOUR_MS)
    t.append(_rows(9, 3))
    snapshots["a4"] = head()
    facts = read(glue_endpoint, s3_endpoint, database, table)
    facts["snapshots_by_label"] = snapshots
    facts["location"] = location
    return facts


def read(glue_endpoint, s3_endpoint, database, table):
    cat = catalog(glue_endpoint, s3_endpoint)
    t = cat.load_table(f"{database}.{table}")
    rows = {}
    for name, ref in t.metadata.refs.items():
        arrow = t.scan(snapshot_id=ref.snapshot_id).to_arrow()
        rows[name] = sorted(arrow.column("id").to_pylist())
    return {
        "metadata_location": t.metadata_location,
        "snapshot_ids": sorted(s.snapshot_id for s in t.metadata.snapshots),
        "refs": {name: ref.snapshot_id for name, ref in t.metadata.refs.items()},
        "rows": rows,
        "metadata_log": [e.metadata_file for e in t.metadata.metadata_log],
        "properties": dict(t.metadata.properties),
        "glue_parameters": cat.glue.get_table(DatabaseName=database, Name=table)["Table"].get("Parameters", {}),
    }


def clickhouse(glue_endpoint, s3_endpoint, database, table):
    """ClickHouse (chdb) reading the table through its own Glue `DataLakeCatalog` database: the
    rows of every ref pyiceberg lists (`iceberg_snapshot_id` per ref), sorted ids by ref name."""
    refs = read(glue_endpoint, s3_endpoint, database, table)["refs"]
    os.chdir("/")
    from chdb import session

    s = session.Session()
    s.query("SET allow_database_glue_catalog = 1")
    s.query(
        f"CREATE DATABASE glue ENGINE = DataLakeCatalog('{glue_endpoint}') SETTINGS "
        f"catalog_type = 'glue', region = '{REGION}', aws_access_key_id = '{KEY}', "
        f"aws_secret_access_key = '{KEY}', storage_endpoint = '{s3_endpoint}'"
    )
    rows = {}
    for name, snapshot_id in refs.items():
        out = s.query(
            f"SELECT id FROM glue.`{database}.{table}` ORDER BY id "
            f"SETTINGS iceberg_snapshot_id = {snapshot_id}",
            "TSV",
        )
        rows[name] = [int(line) for line in str(out).split()]
    current = s.query(f"SELECT id FROM glue.`{database}.{table}` ORDER BY id", "TSV")
    return {"rows": rows, "current": [int(line) for line in str(current).split()]}


def clickhouse_expire(glue_endpoint, s3_endpoint, database, table, before):
    """ClickHouse (chdb) runs its own `expire_snapshots(BEFORE)` on the table through Glue."""
    os.chdir("/")
    from chdb import session

    s = session.Session()
    s.query(
        "SET allow_database_glue_catalog = 1, allow_insert_into_iceberg = 1, "
        "allow_experimental_expire_snapshots = 1"
    )
    s.query(
        f"CREATE DATABASE glue ENGINE = DataLakeCatalog('{glue_endpoint}') SETTINGS "
        f"catalog_type = 'glue', region = '{REGION}', aws_access_key_id = '{KEY}', "
        f"aws_secret_access_key = '{KEY}', storage_endpoint = '{s3_endpoint}'"
    )
    out = s.query(f"ALTER TABLE glue.`{database}.{table}` EXECUTE expire_snapshots('{before}')", "TSV")
    metrics = dict(line.split("\t") for line in str(out).splitlines() if "\t" in line)
    return {"metrics": metrics, "read": read(glue_endpoint, s3_endpoint, database, table)}


def append(glue_endpoint, s3_endpoint, database, table, first, count):
    cat = catalog(glue_endpoint, s3_endpoint)
    t = cat.load_table(f"{database}.{table}")
    t.append(_rows(first, count))
    return {"metadata_location": t.metadata_location, "snapshot_id": t.metadata.current_snapshot_id}


def hive(glue_endpoint, database, table):
    import boto3

    glue = boto3.client(
        "glue",
        endpoint_url=glue_endpoint,
        region_name=REGION,
        aws_access_key_id=KEY,
        aws_secret_access_key=KEY,
    )
    try:
        glue.create_database(DatabaseInput={"Name": database})
    except glue.exceptions.AlreadyExistsException:
        pass
    glue.create_table(
        DatabaseName=database,
        TableInput={
            "Name": table,
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"classification": "parquet"},
            "StorageDescriptor": {"Location": "s3://nowhere/hive", "Columns": [{"Name": "x", "Type": "int"}]},
        },
    )
    return {"database": database, "table": table}


def dangling(glue_endpoint, database, table, location):
    """An Iceberg table whose metadata_location names a file storage does not have."""
    import boto3

    glue = boto3.client(
        "glue",
        endpoint_url=glue_endpoint,
        region_name=REGION,
        aws_access_key_id=KEY,
        aws_secret_access_key=KEY,
    )
    missing = f"{location}/metadata/99999-00000000-0000-4000-8000-000000000000.metadata.json"
    glue.create_table(
        DatabaseName=database,
        TableInput={
            "Name": table,
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"table_type": "ICEBERG", "metadata_location": missing},
            "StorageDescriptor": {"Location": location},
        },
    )
    return {"metadata_location": missing}


def main(argv):
    command, args = argv[0], argv[1:]
    if command == "build":
        result = build(*args[:6], int(args[6]))
    elif command == "read":
        result = read(*args)
    elif command == "append":
        result = append(*args[:4], int(args[4]), int(args[5]))
    elif command == "clickhouse":
        result = clickhouse(*args)
    elif command == "clickhouse_expire":
        result = clickhouse_expire(*args)
    elif command == "hive":
        result = hive(*args)
    elif command == "dangling":
        result = dangling(*args)
    else:
        raise SystemExit(f"unknown command {command!r}")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
