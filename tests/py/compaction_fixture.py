#!/usr/bin/env python3
"""Fixture tables and row readers for the compaction tests (tests/interop/compaction.rs). JSON on stdout.

usage:
  compaction_fixture.py pyiceberg <dir> <partitioned 0|1> [refs]
                                                            every Iceberg type, 6 appends + a copy-on-write delete
                                                            (refs: a tag, and a branch with an append of its own)
  compaction_fixture.py chtyped <dir> <metadata> [<snapshot_id> ...]
                                                            every column as ClickHouse reads it, beside pyiceberg's
                                                            rows in the form ClickHouse gives them (current, snapshots)
  compaction_fixture.py nanos <dir> <first id> <count> <task>
                                                            pyiceberg writes one v3 Parquet data file with
                                                            timestamp_ns / timestamptz_ns (metadata is the caller's)
  compaction_fixture.py parquet_rows <file> [<column> ...]  one Parquet file's rows by pyarrow alone
  compaction_fixture.py simple <dir> <files> [sorted]       (id long, name string), <files> appends of 3 rows
                                                            (sorted: sort order id DESC NULLS LAST)
  compaction_fixture.py simple_append <dir>                 one more append (id 7)
  compaction_fixture.py rows <metadata_json>                every snapshot's rows, read by pyiceberg
  compaction_fixture.py clickhouse <dir> <version>          ClickHouse writes: 5 INSERTs, then DELETEs (position deletes)
  compaction_fixture.py clickhouse_types <dir>              ClickHouse v3 table of many types, INSERTs and a DELETE
  compaction_fixture.py chcount <dir>                       the ids ClickHouse reads, or its error
  compaction_fixture.py evolved <dir> split|derive|hour     partition spec evolution: 3 appends under spec 0,
                                                            update_spec, 3 appends under spec 1 (split: identity(cat)
                                                            -> bucket[4](id), truncate[2](name), day(ts); derive:
                                                            identity(cat), day(ts) -> identity(cat), month(ts);
                                                            hour: hour(ts) -> year(ts), bucket[3](id))
  compaction_fixture.py sorted_transforms <dir>             sort order bucket[4](id), truncate[2](name) desc nulls
                                                            last, day(ts) nulls first; 6 unsorted appends
  compaction_fixture.py nested <dir>                        (id long, s struct<x long, y string>) 4 appends, nulls at
                                                            both levels; prints each row's canon and effective s.x
  compaction_fixture.py check_partitions <metadata>         every live data file: spec id, and whether each row's
                                                            partition (pyiceberg's transforms) is the file's tuple
  compaction_fixture.py check_sorted <metadata>             whether each live data file's rows follow the sort order
  compaction_fixture.py pruned <metadata>                   filtered scans (partition pruning) against filtering
                                                            the full scan

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


def nanos_as_ints(table):
    """Top-level timestamp[ns] columns as `ns:<integer>` text (pyarrow gives no Python value for them
    without pandas, and datetime would drop the nanoseconds)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            ints = table.column(i).cast(pa.int64())
            text = pa.array([None if v is None else f"ns:{v}" for v in ints.to_pylist()], pa.string())
            table = table.set_column(i, field.name, text)
    return table


def canon_rows(table):
    table = nanos_as_ints(table)
    cols = table.column_names
    out = []
    for row in table.to_pylist():
        out.append(json.dumps([canon(row[c]) for c in cols], sort_keys=True))
    return sorted(out)


def ch_view(v, t):
    """A value of Iceberg type `t` as ClickHouse 26.9 (chdb 4.4) reads it, where that differs from
    the value itself (found with chdb, see notes/cinterop.md):
    - struct, list and map columns are `Tuple`, `Array` and `Map`, never Nullable: a null struct reads
      as a tuple of nulls (recursively), a null list or map as an empty one;
    - `time` is `Nullable(Int64)` holding whole seconds since midnight (the microseconds are lost);
    - timestamps come with the session zone (UTC), uuids as UUID values: compared by instant / bytes.
    """
    from pyiceberg import types as T

    if isinstance(t, T.StructType):
        v = v or {}
        return {f.name: ch_view(v.get(f.name), f.field_type) for f in t.fields}
    if isinstance(t, T.ListType):
        return [] if v is None else [ch_view(x, t.element_type) for x in v]
    if isinstance(t, T.MapType):
        return [] if v is None else [(ch_view(k, t.key_type), ch_view(x, t.value_type)) for k, x in v]
    if v is None:
        return None
    if isinstance(t, T.TimeType):
        return v.hour * 3600 + v.minute * 60 + v.second
    return same_form(v, t)


def same_form(v, t):
    """One Python form per Iceberg type for values read by pyiceberg and by chdb."""
    from pyiceberg import types as T

    if isinstance(t, T.StringType) and isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8")
    if isinstance(t, T.TimestampType) and isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
    if isinstance(t, T.TimestamptzType) and isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc)
    if isinstance(t, T.UUIDType):
        return v.bytes if isinstance(v, uuid.UUID) else bytes(v)
    if isinstance(t, (T.FixedType, T.BinaryType)) and isinstance(v, (bytes, bytearray)):
        return bytes(v)
    return v


def from_ch(v, t):
    """A value chdb returned (Arrow) in the form `ch_view` gives."""
    from pyiceberg import types as T

    if isinstance(t, T.StructType):
        return None if v is None else {f.name: from_ch(v.get(f.name), f.field_type) for f in t.fields}
    if isinstance(t, T.ListType):
        return None if v is None else [from_ch(x, t.element_type) for x in v]
    if isinstance(t, T.MapType):
        return None if v is None else [(from_ch(k, t.key_type), from_ch(x, t.value_type)) for k, x in v]
    if v is None:
        return None
    return same_form(v, t)


def view_rows(table, schema, convert):
    """Canonical rows of an Arrow table whose columns are `schema`'s, each value through `convert`."""
    table = nanos_as_ints(table)
    fields = {f.name: f.field_type for f in schema.fields}
    out = []
    for row in table.to_pylist():
        out.append(json.dumps([canon(convert(row[c], fields[c])) for c in table.column_names], sort_keys=True))
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


def cmd_pyiceberg(out_dir, partitioned, refs=False):
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
    if refs:
        # A tag on the third snapshot and a branch from the fourth with a row of its own: refs whose
        # snapshots are not the current one, read before and after compaction.
        snaps = table.metadata.snapshots
        table.manage_snapshots().create_tag(snaps[2].snapshot_id, "t1").create_branch(snaps[3].snapshot_id, "b1").commit()
        table = catalog.load_table("fx.t")
        table.append(arrow_table(table.schema(), every_type_rows(100, 3, parts)), branch="b1")
        table = catalog.load_table("fx.t")
    exp_table = arrow_table(table.schema(), expected)
    exp = canon_rows(exp_table)
    exp_ch = view_rows(exp_table, table.schema(), ch_view)
    print(json.dumps({"metadata": newest_metadata(out_dir), "dir": out_dir, "expected": exp,
                      "expected_clickhouse": exp_ch}))


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


def arrow_query(sess, sql, settings=""):
    """A query's result as an Arrow table (strings as bytes: binary columns need not be UTF-8)."""
    import pyarrow as pa

    result = sess.query(f"{sql} SETTINGS output_format_arrow_string_as_string = 0{settings}", "ArrowStream")
    data = result.bytes() if result is not None else b""
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def cmd_chtyped(table_dir, metadata, snapshot_ids):
    """Every column of the current snapshot and of `snapshot_ids` as ClickHouse reads it, next to
    pyiceberg's rows of the same snapshot in the form ClickHouse gives (`ch_view`). Canonical rows."""
    import chdb_session
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    schemas = {s.schema_id: s for s in table.metadata.schemas}
    out = {"current": None, "py_current": None, "snapshots": {}, "py_snapshots": {}, "errors": {}}
    def attached():
        sess = chdb_session.open_session()
        chdb_session.run(sess, chdb_session.attach_statement(os.path.abspath(table_dir)))
        return sess

    sess = attached()
    try:
        targets = [("current", table.metadata.current_snapshot_id)] + [(sid, int(sid)) for sid in snapshot_ids]
        for key, sid in targets:
            snap = table.metadata.snapshot_by_id(sid)
            schema = schemas.get(snap.schema_id, table.schema()) if snap is not None and snap.schema_id is not None else table.schema()
            try:
                extra = "" if key == "current" else f", iceberg_snapshot_id = {sid}"
                ch = arrow_query(sess, "SELECT * FROM t", extra)
                ch_rows = view_rows(ch, schema, from_ch)
            except Exception as e:  # noqa: BLE001 - reported, the test decides
                out["errors"][key] = str(e)[:2000]
                ch_rows = None
                # chdb 4.4: after a query fails while executing, the next query's result carries
                # the failed one's partial output (an Arrow stream reads as empty, JSON as "Extra
                # data"). A fresh session reads correctly.
                sess.close()
                sess = attached()
            try:
                py = view_rows(table.scan(snapshot_id=sid).to_arrow(), schema, ch_view)
            except Exception as e:  # noqa: BLE001 - pyiceberg cannot read equality deletes
                out.setdefault("py_errors", {})[key] = f"{type(e).__name__}: {e}"[:2000]
                py = None
            if key == "current":
                out["current"], out["py_current"] = ch_rows, py
            else:
                out["snapshots"][key], out["py_snapshots"][key] = ch_rows, py
    finally:
        sess.close()
    print(json.dumps(out))


def cmd_nanos(out_dir, first, count, task):
    """pyiceberg 0.12's own Parquet writer (`write_file`, table metadata v3 held in memory: pyiceberg
    cannot serialise v3 metadata) writes one data file of (id long, tns timestamp_ns,
    tstzns timestamptz_ns, s string) into <out_dir>/data. Prints the file and its canonical rows."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import PyArrowFileIO, schema_to_pyarrow, write_file
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table import WriteTask
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import SortOrder
    from pyiceberg.types import LongType, NestedField, StringType, TimestampNanoType, TimestamptzNanoType

    out_dir = os.path.abspath(out_dir)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "tns", TimestampNanoType(), required=False),
                    NestedField(3, "tstzns", TimestamptzNanoType(), required=False),
                    NestedField(4, "s", StringType(), required=False))
    md = new_table_metadata(schema, PartitionSpec(), SortOrder(), "file://" + out_dir, {"format-version": "3"})
    assert md.format_version == 3
    ids = list(range(first, first + count))
    # Nanoseconds that microseconds cannot hold, before and after 1970, and nulls.
    tns = [[1_700_000_000_123_456_789 + n, -1_000_000_001 - n, None, 4_102_444_799_999_999_999 - n][n % 4] for n in ids]
    tstz = [[None, 1_000_000_000_000_000_001 + n, -2_208_988_800_000_000_000 + n * 7, 1 + n][n % 4] for n in ids]
    arrow = pa.Table.from_pydict({
        "id": pa.array(ids, pa.int64()),
        "tns": pa.array(tns, pa.timestamp("ns")),
        "tstzns": pa.array(tstz, pa.timestamp("ns", tz="UTC")),
        "s": pa.array([f"n{n}" for n in ids], pa.large_string()),
    }, schema=schema_to_pyarrow(md.schema()))
    task_ = WriteTask(uuid.uuid4(), int(task), md.schema(), arrow.to_batches())
    [f] = list(write_file(PyArrowFileIO(), md, iter([task_])))
    print(json.dumps({"path": f.file_path.removeprefix("file://"), "record_count": f.record_count,
                      "size": f.file_size_in_bytes, "rows": canon_rows(arrow)}))


def cmd_parquet_rows(path, columns):
    """The rows (of `columns`) of one Parquet file read by pyarrow alone, and its Parquet schema."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    print(json.dumps({"rows": canon_rows(pf.read(columns=columns or None)), "schema": str(pf.schema)}))


def evolving_schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType, TimestampType

    return Schema(NestedField(1, "id", LongType(), required=False),
                  NestedField(2, "name", StringType(), required=False),
                  NestedField(3, "ts", TimestampType(), required=False),
                  NestedField(4, "cat", StringType(), required=False))


def evolving_rows(start, count):
    base = datetime.datetime(2024, 6, 1, 10, 30)
    rows = []
    for i in range(start, start + count):
        rows.append({
            "id": None if i % 11 == 10 else i,
            "name": None if i % 9 == 8 else ["apple", "apricot", "banana", "blue", "cherry", "é-acute"][i % 6] + str(i),
            "ts": None if i % 13 == 12 else base + datetime.timedelta(hours=17 * i, microseconds=i),
            "cat": ["a", "b"][i % 2],
        })
    return rows


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


def cmd_evolved(out_dir, kind):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import (BucketTransform, DayTransform, HourTransform, IdentityTransform,
                                      MonthTransform, TruncateTransform, YearTransform)

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    catalog = catalog_for("file://" + out_dir)
    schema = evolving_schema()
    if kind == "split":
        spec = PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "cat"))
    elif kind == "hour":
        spec = PartitionSpec(PartitionField(3, 1000, HourTransform(), "ts_hour"))
    else:
        spec = PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "cat"),
                             PartitionField(3, 1001, DayTransform(), "ts_day"))
    table = catalog.create_table("fx.t", schema=schema, location="file://" + out_dir, partition_spec=spec,
                                 properties={"format-version": "2"})
    expected = []
    for step in range(6):
        if step == 3:
            with table.update_spec() as u:
                if kind == "split":
                    u.remove_field("cat")
                    u.add_field("id", BucketTransform(4), "id_bucket")
                    u.add_field("name", TruncateTransform(2), "name_trunc")
                    u.add_field("ts", DayTransform(), "ts_day")
                elif kind == "hour":
                    u.remove_field("ts_hour")
                    u.add_field("ts", YearTransform(), "ts_year")
                    u.add_field("id", BucketTransform(3), "id_bucket")
                else:
                    u.remove_field("ts_day")
                    u.add_field("ts", MonthTransform(), "ts_month")
            table = catalog.load_table("fx.t")
        rows = evolving_rows(step * 10, 10)
        table.append(arrow_table(table.schema(), rows))
        expected.extend(rows)
    table = catalog.load_table("fx.t")
    exp = canon_rows(arrow_table(table.schema(), expected))
    print(json.dumps({"metadata": newest_metadata(out_dir), "dir": out_dir, "expected": exp,
                      "default_spec": table.metadata.default_spec_id}))


def cmd_sorted_transforms(out_dir):
    from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
    from pyiceberg.transforms import BucketTransform, DayTransform, TruncateTransform

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    catalog = catalog_for("file://" + out_dir)
    order = SortOrder(
        SortField(source_id=1, transform=BucketTransform(4), direction=SortDirection.ASC,
                  null_order=NullOrder.NULLS_FIRST),
        SortField(source_id=2, transform=TruncateTransform(2), direction=SortDirection.DESC,
                  null_order=NullOrder.NULLS_LAST),
        SortField(source_id=3, transform=DayTransform(), direction=SortDirection.ASC,
                  null_order=NullOrder.NULLS_FIRST),
    )
    table = catalog.create_table("fx.t", schema=evolving_schema(), location="file://" + out_dir,
                                 sort_order=order, properties={"format-version": "2"})
    expected = []
    for step in range(6):
        rows = evolving_rows(step * 10, 10)
        rows.reverse()
        table.append(arrow_table(table.schema(), rows))
        expected.extend(rows)
    table = catalog.load_table("fx.t")
    exp = canon_rows(arrow_table(table.schema(), expected))
    print(json.dumps({"metadata": newest_metadata(out_dir), "dir": out_dir, "expected": exp,
                      "order_id": table.metadata.default_sort_order_id}))


def cmd_nested(out_dir):
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType, StructType

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    catalog = catalog_for("file://" + out_dir)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "s", StructType(NestedField(3, "x", LongType(), required=False),
                                                   NestedField(4, "y", StringType(), required=False)),
                                required=False))
    table = catalog.create_table("fx.t", schema=schema, location="file://" + out_dir,
                                 properties={"format-version": "2"})
    rows = []
    for step in range(4):
        batch = []
        for i in range(step * 6, step * 6 + 6):
            if i % 5 == 0:
                s = None
            else:
                s = {"x": None if i % 4 == 0 else i % 7, "y": f"y{i}"}
            batch.append({"id": i, "s": s})
        table.append(arrow_table(table.schema(), batch))
        rows.extend(batch)
    out = []
    for r in rows:
        one = canon_rows(arrow_table(table.schema(), [r]))[0]
        x = None if r["s"] is None else r["s"]["x"]
        y = None if r["s"] is None else r["s"]["y"]
        out.append({"canon": one, "id": r["id"], "x": x, "y": y})
    print(json.dumps({"metadata": newest_metadata(out_dir), "dir": out_dir, "rows": out}))


def live_files(table):
    """(data file, spec id) of every live data file of the current snapshot."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    snap = table.current_snapshot()
    out = []
    for m in snap.manifests(table.io):
        if m.content != ManifestContent.DATA:
            continue
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True):
            out.append((e.data_file, m.partition_spec_id))
    return out


def read_file(table, path):
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import _read_all_delete_files  # noqa: F401 - import check only

    with table.io.new_input(path).open() as f:
        return pq.read_table(f)


def cmd_check_partitions(metadata):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    schema = table.schema()
    out = {"files": 0, "spec_ids": [], "paths": [], "bad": [], "rows": 0}
    for df, spec_id in live_files(table):
        spec = table.metadata.specs()[spec_id]
        out["files"] += 1
        out["spec_ids"].append(spec_id)
        out["paths"].append(df.file_path)
        data = read_file(table, df.file_path)
        by_id = {f.metadata[b"PARQUET:field_id"].decode(): data.column(i).to_pylist()
                 for i, f in enumerate(data.schema)}
        want = tuple(df.partition[i] for i in range(len(spec.fields)))
        for row in range(data.num_rows):
            out["rows"] += 1
            got = []
            for pf in spec.fields:
                source_type = schema.find_field(pf.source_id).field_type
                value = by_id[str(pf.source_id)][row]
                if value is not None and str(source_type) == "timestamp":
                    value = int((value - datetime.datetime(1970, 1, 1)) / datetime.timedelta(microseconds=1))
                got.append(pf.transform.transform(source_type)(value))
            if tuple(got) != want:
                out["bad"].append(f"{df.file_path} row {row}: rows say {got}, the manifest says {list(want)}")
                break
    print(json.dumps(out, default=str))


def cmd_check_sorted(metadata):
    from pyiceberg.table import StaticTable
    from pyiceberg.table.sorting import NullOrder, SortDirection

    table = StaticTable.from_metadata(metadata)
    schema = table.schema()
    order = table.sort_order()
    out = {"files": 0, "unsorted": [], "sort_order_ids": [], "rows": 0}
    for df, _ in live_files(table):
        out["files"] += 1
        out["sort_order_ids"].append(df.sort_order_id)
        data = read_file(table, df.file_path)
        by_id = {f.metadata[b"PARQUET:field_id"].decode(): data.column(i).to_pylist()
                 for i, f in enumerate(data.schema)}

        def key(row):
            k = []
            for sf in order.fields:
                source_type = schema.find_field(sf.source_id).field_type
                value = by_id[str(sf.source_id)][row]
                if value is not None and str(source_type) == "timestamp":
                    value = int((value - datetime.datetime(1970, 1, 1)) / datetime.timedelta(microseconds=1))
                v = sf.transform.transform(source_type)(value)
                null_rank = 0 if sf.null_order == NullOrder.NULLS_FIRST else 2
                if v is None:
                    k.append((null_rank, 0))
                else:
                    k.append((1, v if sf.direction == SortDirection.ASC else Desc(v)))
            return k

        keys = [key(r) for r in range(data.num_rows)]
        out["rows"] += len(keys)
        for i in range(1, len(keys)):
            if keys[i] < keys[i - 1]:
                out["unsorted"].append(f"{df.file_path}: row {i} {keys[i]} before {keys[i - 1]}")
                break
    print(json.dumps(out, default=str))


class Desc:
    """Reverses the order of a value."""

    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v > other.v

    def __eq__(self, other):
        return self.v == other.v

    def __repr__(self):
        return f"desc({self.v!r})"


def cmd_pruned(metadata):
    import pyarrow.compute as pc  # noqa: F401
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    full = table.scan().to_arrow().to_pylist()
    day = datetime.datetime(2024, 6, 3)
    filters = [
        ("id = 34", lambda r: r["id"] == 34),
        ("id IN (3, 17, 41)", lambda r: r["id"] in (3, 17, 41)),
        ("name = 'banana2'", lambda r: r["name"] == "banana2"),
        ("name >= 'bl'", lambda r: r["name"] is not None and r["name"] >= "bl"),
        ("ts >= '2024-06-03T00:00:00' AND ts < '2024-06-05T00:00:00'",
         lambda r: r["ts"] is not None and day <= r["ts"] < day + datetime.timedelta(days=2)),
        ("ts IS NULL", lambda r: r["ts"] is None),
        ("cat = 'a'", lambda r: r["cat"] == "a"),
    ]
    out = {"mismatches": [], "planned": {}, "total_files": len(list(table.scan().plan_files()))}
    for text, pred in filters:
        scan = table.scan(row_filter=text)
        got = sorted(json.dumps([canon(r[c]) for c in sorted(r)], sort_keys=True) for r in scan.to_arrow().to_pylist())
        want = sorted(json.dumps([canon(r[c]) for c in sorted(r)], sort_keys=True) for r in full if pred(r))
        out["planned"][text] = len(list(scan.plan_files()))
        if got != want:
            out["mismatches"].append({"filter": text, "got": got, "want": want})
    print(json.dumps(out))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "pyiceberg":
        cmd_pyiceberg(args[0], args[1] == "1", len(args) > 2 and args[2] == "refs")
    elif cmd == "chtyped":
        cmd_chtyped(args[0], args[1], args[2:])
    elif cmd == "nanos":
        cmd_nanos(args[0], int(args[1]), int(args[2]), args[3])
    elif cmd == "parquet_rows":
        cmd_parquet_rows(args[0], args[1:])
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
    elif cmd == "evolved":
        cmd_evolved(args[0], args[1])
    elif cmd == "sorted_transforms":
        cmd_sorted_transforms(args[0])
    elif cmd == "nested":
        cmd_nested(args[0])
    elif cmd == "check_partitions":
        cmd_check_partitions(args[0])
    elif cmd == "check_sorted":
        cmd_check_sorted(args[0])
    elif cmd == "pruned":
        cmd_pruned(args[0])
    elif cmd == "describe":
        cmd_describe(args[0])
    else:
        raise SystemExit(f"unknown command {cmd}")


def cmd_describe(table_dir):
    """ClickHouse's DESCRIBE TABLE of the Iceberg table in `table_dir`: its seven columns per row."""
    import chdb_session

    sess = chdb_session.open_session()
    try:
        text = sess.query(
            f"DESCRIBE TABLE icebergLocal({chdb_session.sql_string(os.path.abspath(table_dir))})",
            "JSONCompact",
        ).bytes().decode()
    finally:
        sess.close()
    print(json.dumps({"rows": json.loads(text)["data"]}))


if __name__ == "__main__":
    main()
