#!/usr/bin/env python3
"""A table whose position deletes do not apply under the spec (tests/interop/compaction_disputed.rs).
JSON on stdout.

usage:
  spec_change_deletes.py build <dir>   pyiceberg: (id long, name string, part int) identity(part);
                                       3 appends; spec evolution adding bucket[2](id); 2 appends;
                                       metadata renamed to ClickHouse's v<N> names; then ClickHouse
                                       `DELETE FROM t WHERE id IN (1, 2, 13)`: ClickHouse files the
                                       deletes of older-spec rows under the newest spec (their
                                       file_path bounds one path, no referenced_data_file)
  spec_change_deletes.py read <dir> <metadata>
                                       the ids pyiceberg (that metadata file) and ClickHouse read

pyiceberg 0.12 applies those position deletes, ClickHouse does not: the two readers disagree.
"""

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))


def newest_v_metadata(table_dir):
    files = glob.glob(os.path.join(table_dir, "metadata", "v*.metadata.json"))
    return max(files, key=lambda p: int(os.path.basename(p)[1:].split(".")[0]))


def cmd_build(out_dir):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, IdentityTransform
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType

    import ch_build
    import chdb_session

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    location = "file://" + out_dir
    catalog = SqlCatalog("fixture", uri="sqlite:///:memory:", warehouse=location)
    catalog.create_namespace("fx")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "part", IntegerType(), required=False))
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "part"))
    table = catalog.create_table("fx.t", schema=schema, location=location, partition_spec=spec,
                                 properties={"format-version": "2"})

    def append(ids):
        table.append(pa.table({
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"r{i}" for i in ids], pa.large_string()),
            "part": pa.array([i % 2 for i in ids], pa.int32()),
        }))

    for k in range(3):
        append(list(range(k * 4, k * 4 + 4)))
    with table.update_spec() as update:
        update.add_field("id", BucketTransform(2), "id_bucket")
    table = catalog.load_table("fx.t")
    for k in range(3, 5):
        append(list(range(k * 4, k * 4 + 4)))
    ch_build.rename_to_v_naming({"table_dir": out_dir, "notes": {}})
    sess = chdb_session.open_session()
    try:
        chdb_session.run(sess, chdb_session.attach_statement(out_dir))
        chdb_session.run(sess, "DELETE FROM t WHERE id IN (1, 2, 13)")
    finally:
        sess.close()
    print(json.dumps({"dir": out_dir, "metadata": newest_v_metadata(out_dir)}))


def cmd_read(table_dir, metadata):
    import chdb_session
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    py = sorted(table.scan().to_arrow().column("id").to_pylist())
    sess = chdb_session.open_session()
    try:
        chdb_session.run(sess, chdb_session.attach_statement(os.path.abspath(table_dir)))
        _, rows = chdb_session.run(sess, "SELECT id FROM t ORDER BY id")
        ch = [int(r[0]) for r in rows]
    finally:
        sess.close()
    print(json.dumps({"pyiceberg": py, "clickhouse": ch}))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "build":
        cmd_build(args[0])
    elif cmd == "read":
        cmd_read(args[0], args[1])
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
