#!/usr/bin/env python3
"""Fixture tables and row readers for the compaction tests (tests/interop/compaction.rs). JSON on stdout.

usage:
  compaction_fixture.py pyiceberg <dir> <partitioned 0|1>   every Iceberg type, 6 appends + a copy-on-write delete
  compaction_fixture.py simple <dir> <files> [sorted]       (id long, name string), <files> appends of 3 rows
                                                            (sorted: sort order id DESC NULLS LAST)
  compaction_fixture.py simple_append <dir>                 one more append (id 7)
  compaction_fixture.py rows <metadata_json>                every snapshot's rows, read by pyiceberg
  compaction_fixture.py clickhouse <dir> <version>          ClickHouse writes: 5 INSERTs, then DELETEs (position deletes)
  compaction_fixture.py chrows <dir> [<snapshot_id> ...]    rows as ClickHouse reads them (current, then each snapshot)
  compaction_fixture.py clickhouse_types <dir>              ClickHouse v3 table of many types, INSERTs and a DELETE
  compaction_fixture.py chall <dir> [<snapshot_id> ...]     every column as ClickHouse reads it
  compaction_fixture.py chcount <dir>                       the ids ClickHouse reads, or its error

Rows are canonical text (one JSON array per row, sorted): floats by their IEEE bits (so NaN and -0.0
compare exactly), decimals as text, dates and times in ISO form, bytes and UUIDs as hex, structs as
objects, lists as arrays, maps as sorted [key, value] pairs; null is null at every level.
"""

import datetime
import decimal
import glob
import json
import math
import os
import struct
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))


def canon(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        return "f:" + struct.pack(">d", v).hex()
    if isinstance(v, int):
        return v
    if isinstance(v, decimal.Decimal):
        return "dec:" + str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return "hex:" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return "hex:" + v.bytes.hex()
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return sorted(([canon(k), canon(x)] for k, x in v), key=json.dumps)
        return [canon(x) for x in v]
    if isinstance(v, tuple):
        return [canon(x) for x in v]
    return repr(v)


def canon_rows(table):
    cols = table.column_names
    out = []
    for row in table.to_pylist():
        out.append(json.dumps([canon(row[c]) for c in cols], sort_keys=True))
    return sorted(out)


def catalog_for(location):
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("fixture", uri="sqlite:///:memory:", warehouse=location)
    catalog.create_namespace("fx")
    return catalog


def every_type_schema(partitioned):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import (
        BinaryType, BooleanType, DateType, DecimalType, DoubleType, FixedType, FloatType,
        IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType, TimestampType,
        TimestamptzType, TimeType, UUIDType,
    )

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "part", StringType(), required=False),
        NestedField(3, "b", BooleanType(), required=False),
        NestedField(4, "i", IntegerType(), required=False),
        NestedField(5, "f", FloatType(), required=False),
        NestedField(6, "d", DoubleType(), required=False),
        NestedField(7, "dec", DecimalType(10, 2), required=False),
        NestedField(8, "dt", DateType(), required=False),
        NestedField(9, "tm", TimeType(), required=False),
        NestedField(10, "ts", TimestampType(), required=False),
        NestedField(11, "tstz", TimestamptzType(), required=False),
        NestedField(12, "s", StringType(), required=False),
        NestedField(13, "u", UUIDType(), required=False),
        NestedField(14, "fx", FixedType(4), required=False),
        NestedField(15, "bin", BinaryType(), required=False),
        NestedField(16, "st", StructType(
            NestedField(17, "x", IntegerType(), required=False),
            NestedField(18, "y", StringType(), required=False),
        ), required=False),
        NestedField(19, "li", ListType(20, LongType(), element_required=False), required=False),
        NestedField(21, "mp", MapType(22, StringType(), 23, DoubleType(), value_required=False), required=False),
    )
    spec = PartitionSpec()
    if partitioned:
        spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
    return schema, spec


def every_type_rows(start, count, parts):
    import pyarrow as pa

    rows = []
    for n in range(start, start + count):
        k = n % 5
        rows.append({
            "id": n,
            "part": parts[n % len(parts)],
            "b": [True, False, None, True, False][k],
            "i": [n, -n, None, 2**31 - 1, -(2**31)][k],
            "f": [float(n) + 0.5, float("nan"), -0.0, None, float("inf")][k],
            "d": [float(n) / 3, -0.0, float("nan"), float("-inf"), None][k],
            "dec": [decimal.Decimal(f"{n}.25"), decimal.Decimal("-99999999.99"), None, decimal.Decimal("0.00"), decimal.Decimal("12345678.90")][k],
            "dt": [datetime.date(2024, 1, 1) + datetime.timedelta(days=n), None, datetime.date(1969, 12, 31), datetime.date(2000, 2, 29), datetime.date(1970, 1, 1)][k],
            "tm": [datetime.time(12, 30, n % 60, 123456), None, datetime.time(0, 0), datetime.time(23, 59, 59, 999999), datetime.time(1, 2, 3)][k],
            "ts": [datetime.datetime(2024, 3, 1, 12, 0, n % 60, 5), None, datetime.datetime(1969, 7, 20, 20, 17, 40), datetime.datetime(2038, 1, 19, 3, 14, 8), datetime.datetime(1970, 1, 1)][k],
            "tstz": [datetime.datetime(2024, 3, 1, 12, 0, n % 60, tzinfo=datetime.timezone.utc), None, datetime.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc), datetime.datetime(2024, 6, 1, tzinfo=datetime.timezone.utc), datetime.datetime(1960, 1, 1, tzinfo=datetime.timezone.utc)][k],
            "s": [f"row-{n}", "", None, "ünïcödé ✓ " + "x" * 40, "a'b\"c\\d"][k],
            "u": [uuid.UUID(int=n).bytes, None, uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff").bytes, uuid.uuid5(uuid.NAMESPACE_DNS, str(n)).bytes, uuid.UUID(int=0).bytes][k],
            "fx": [n.to_bytes(4, "big"), None, b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"abcd"][k],
            "bin": [bytes([n % 256]) * 3, b"", None, bytes(range(40)), b"\x00"][k],
            "st": [{"x": n, "y": f"s{n}"}, None, {"x": None, "y": None}, {"x": -1, "y": None}, {"x": None, "y": "only-y"}][k],
            "li": [[n, n + 1], None, [], [None, 5], [None]][k],
            "mp": [[("a", float(n)), ("b", float("nan"))], None, [], [("k", None)], [("z", -0.0)]][k],
        })
    return rows


def arrow_table(schema, rows):
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=schema_to_pyarrow(schema))


def newest_metadata(location_dir):
    files = glob.glob(os.path.join(location_dir, "metadata", "*.metadata.json"))
    return max(files, key=lambda p: os.path.basename(p))


def cmd_pyiceberg(out_dir, partitioned):
    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    location = "file://" + out_dir
    catalog = catalog_for(location)
    schema, spec = every_type_schema(partitioned)
    table = catalog.create_table("fx.t", schema=schema, location=location, partition_spec=spec,
                                 properties={"format-version": "2"})
    parts = ["a", "b"] if partitioned else ["a"]
    expected = []
    for step in range(6):
        rows = every_type_rows(step * 4, 4, parts)
        table.append(arrow_table(table.schema(), rows))
        expected.extend(rows)
    # Copy-on-write delete: the file holding id 5 is rewritten (an overwrite snapshot).
    table.delete("id = 5")
    expected = [r for r in expected if r["id"] != 5]
    table = catalog.load_table("fx.t")
    exp = canon_rows(arrow_table(table.schema(), expected))
    print(json.dumps({"metadata": newest_metadata(out_dir), "dir": out_dir, "expected": exp}))


def cmd_simple(out_dir, files, sorted_desc=False):
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    location = "file://" + out_dir
    catalog = catalog_for(location)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False))
    kwargs = {}
    if sorted_desc:
        from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
        from pyiceberg.transforms import IdentityTransform

        kwargs["sort_order"] = SortOrder(SortField(source_id=1, transform=IdentityTransform(),
                                                   direction=SortDirection.DESC, null_order=NullOrder.NULLS_LAST))
    table = catalog.create_table("fx.t", schema=schema, location=location,
                                 properties={"format-version": "2"}, **kwargs)
    for f in range(files):
        ids = [f * 3 + k for k in range(3)]
        table.append(pa.table({"id": pa.array(ids, pa.int64()),
                               "name": pa.array([f"row-{i}" for i in ids], pa.large_string())}))
    print(json.dumps({"metadata": newest_metadata(out_dir), "dir": out_dir}))


def cmd_simple_append(out_dir):
    """One more append to a `simple` table: id 7 again (after an equality delete of 7)."""
    import pyarrow as pa
    from pyiceberg.table import StaticTable

    out_dir = os.path.abspath(out_dir)
    catalog = catalog_for("file://" + out_dir)
    table = catalog.register_table("fx.t", newest_metadata(out_dir))
    table.append(pa.table({"id": pa.array([7], pa.int64()), "name": pa.array(["row-7"], pa.large_string())}))
    print(json.dumps({"metadata": newest_metadata(out_dir)}))


def cmd_rows(metadata):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    out = {"current": table.metadata.current_snapshot_id, "snapshots": {}, "errors": {}}
    for snap in table.metadata.snapshots:
        try:
            out["snapshots"][str(snap.snapshot_id)] = canon_rows(table.scan(snapshot_id=snap.snapshot_id).to_arrow())
        except Exception as e:  # noqa: BLE001 - reported, the test decides
            out["errors"][str(snap.snapshot_id)] = f"{type(e).__name__}: {e}"
    print(json.dumps(out))


def cmd_clickhouse(out_dir, version):
    import chdb_session

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    sess = chdb_session.open_session()
    try:
        chdb_session.run(sess, "CREATE TABLE t (id Int64, name Nullable(String), v Nullable(Float64)) "
                         f"ENGINE = IcebergLocal({chdb_session.sql_string(out_dir)}) "
                         f"SETTINGS iceberg_format_version = {int(version)}")
        for i in range(5):
            values = ", ".join(f"({n}, 'row-{n}', {n}.5)" for n in range(i * 3, i * 3 + 3))
            chdb_session.run(sess, f"INSERT INTO t VALUES {values}")
        chdb_session.run(sess, "DELETE FROM t WHERE id = 4")
        chdb_session.run(sess, "DELETE FROM t WHERE id IN (7, 8, 13)")
    finally:
        sess.close()
    expected = sorted(json.dumps([n, f"row-{n}", "f:" + struct.pack(">d", n + 0.5).hex()])
                      for n in range(15) if n not in (4, 7, 8, 13))
    print(json.dumps({"dir": out_dir, "expected": expected}))


def cmd_clickhouse_types(out_dir):
    """A ClickHouse v3 table of many types (decimal(20,4) as fixed bytes, uuid, pre-1970 dates,
    microsecond timestamps, arrays, maps, tuples, nulls inside them), 4 INSERTs, a DELETE."""
    import chdb_session

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    sess = chdb_session.open_session()
    try:
        chdb_session.run(sess, "CREATE TABLE t (id Int64, ts Nullable(DateTime64(6, 'UTC')), "
                         "d Nullable(Decimal(20, 4)), u Nullable(UUID), dt Nullable(Date32), "
                         "f Nullable(Float32), a Array(Nullable(Int32)), m Map(String, Nullable(Float64)), "
                         "tp Tuple(x Nullable(Int32), y Nullable(String))) "
                         f"ENGINE = IcebergLocal({chdb_session.sql_string(out_dir)}) "
                         "SETTINGS iceberg_format_version = 3")
        for i in range(4):
            rows = []
            for n in range(i * 3, i * 3 + 3):
                k = n % 3
                rows.append(
                    f"({n}, " + ["'2024-01-01 00:00:00.123456'", "NULL", "'1969-07-20 20:17:40'"][k]
                    + ", " + [f"{n}.5", "NULL", "-12345678901234.5678"][k]
                    + ", " + [f"'00000000-0000-0000-0000-{n:012d}'", "NULL", "'ffffffff-ffff-ffff-ffff-ffffffffffff'"][k]
                    + ", " + ["'1960-01-01'", "NULL", "'2100-12-31'"][k]
                    + ", " + ["nan", "-0.", "NULL"][k]
                    + ", " + [f"[{n}, NULL]", "[]", "[NULL]"][k]
                    + ", " + [f"{{'a': {n}.5, 'b': NULL}}", "{}", "{'z': -0.}"][k]
                    + ", " + [f"({n}, 'y{n}')", "(NULL, NULL)", "(NULL, 'only')"][k] + ")"
                )
            chdb_session.run(sess, "INSERT INTO t VALUES " + ", ".join(rows))
        chdb_session.run(sess, "DELETE FROM t WHERE id IN (4, 9)")
    finally:
        sess.close()
    print(json.dumps({"dir": out_dir}))


def cmd_chall(table_dir, snapshot_ids):
    """Every column as ClickHouse reads it (floats by their text), current and per snapshot."""
    import chdb_session

    sess = chdb_session.open_session()
    out = {"current": None, "snapshots": {}, "errors": {}}
    q = "SELECT * FROM t"
    try:
        chdb_session.run(sess, chdb_session.attach_statement(os.path.abspath(table_dir)))
        _, rows = chdb_session.run(sess, q)
        out["current"] = sorted(json.dumps(r) for r in rows)
        for sid in snapshot_ids:
            try:
                _, rows = chdb_session.run(sess, f"{q} SETTINGS iceberg_snapshot_id = {int(sid)}")
                out["snapshots"][sid] = sorted(json.dumps(r) for r in rows)
            except Exception as e:  # noqa: BLE001
                out["errors"][sid] = str(e)
    finally:
        sess.close()
    print(json.dumps(out))


def cmd_chcount(table_dir):
    """ClickHouse's row count and id multiset of the current snapshot, or its error."""
    import chdb_session

    sess = chdb_session.open_session()
    try:
        chdb_session.run(sess, chdb_session.attach_statement(os.path.abspath(table_dir)))
        _, rows = chdb_session.run(sess, "SELECT id FROM t ORDER BY id")
        print(json.dumps({"ids": [r[0] for r in rows]}))
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": str(e)[:500]}))
    finally:
        sess.close()


def cmd_chrows(table_dir, snapshot_ids):
    import chdb_session

    sess = chdb_session.open_session()
    out = {"current": None, "snapshots": {}, "errors": {}}
    try:
        chdb_session.run(sess, chdb_session.attach_statement(os.path.abspath(table_dir)))
        q = "SELECT id, name, v FROM t"
        try:
            _, rows = chdb_session.run(sess, q)
            out["current"] = sorted(json.dumps(r) for r in rows)
        except Exception as e:  # noqa: BLE001
            out["errors"]["current"] = str(e)
        for sid in snapshot_ids:
            try:
                _, rows = chdb_session.run(sess, f"{q} SETTINGS iceberg_snapshot_id = {int(sid)}")
                out["snapshots"][sid] = sorted(json.dumps(r) for r in rows)
            except Exception as e:  # noqa: BLE001
                out["errors"][sid] = str(e)
    finally:
        sess.close()
    print(json.dumps(out))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "pyiceberg":
        cmd_pyiceberg(args[0], args[1] == "1")
    elif cmd == "simple":
        cmd_simple(args[0], int(args[1]), len(args) > 2 and args[2] == "sorted")
    elif cmd == "simple_append":
        cmd_simple_append(args[0])
    elif cmd == "rows":
        cmd_rows(args[0])
    elif cmd == "clickhouse":
        cmd_clickhouse(args[0], args[1])
    elif cmd == "clickhouse_types":
        cmd_clickhouse_types(args[0])
    elif cmd == "chcount":
        cmd_chcount(args[0])
    elif cmd == "chall":
        cmd_chall(args[0], args[1:])
    elif cmd == "chrows":
        cmd_chrows(args[0], args[1:])
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
