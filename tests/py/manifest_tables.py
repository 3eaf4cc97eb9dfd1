#!/usr/bin/env python3
"""Tables for the manifest-rewrite tests, and the readers that check them.

usage:
  manifest_tables.py build <dir> <format_version> <appends> [overwrite] [one_spec]
      A pyiceberg table in <dir> (its location): <appends> fast appends over identity(cat)
      (3 categories), a schema change (columns `score`, `region` added), more appends, a partition
      spec change (identity(region) added), more appends, a copy-on-write delete of category 'c0', a branch
      `b1` and a tag `t1`. With `overwrite`, the whole table is rewritten (an overwrite snapshot)
      just before the delete, so older schemas and specs fall out of use. With `one_spec`, no
      partition spec change (ClickHouse 26.9's OPTIMIZE ... MANIFEST skips tables with several
      specs). Metadata files renamed to v<N>.metadata.json (ClickHouse reads the
      folder). Prints {"metadata": <newest metadata file>}.
  manifest_tables.py read <metadata file>
      pyiceberg's view: rows of every ref (sorted), `inspect.manifests` and every field of every
      live entry of the current snapshot (`inspect.entries`, bounds as hex).
  manifest_tables.py chdb <dir> <sql>...
      Each statement on ClickHouse (chdb) with the table attached as `t`; prints the rows.
"""

import glob
import json
import os
import re
import sys


def _rename_to_v(table_dir):
    """pyiceberg writes NNNNN-<uuid>.metadata.json; ClickHouse wants v<N>.metadata.json."""
    meta = os.path.join(table_dir, "metadata")
    files = sorted(glob.glob(os.path.join(meta, "*-*.metadata.json")))
    mapping = {}
    for f in files:
        n = int(os.path.basename(f).split("-")[0]) + 1
        mapping[f] = os.path.join(meta, f"v{n}.metadata.json")
    for old, new in mapping.items():
        doc = json.load(open(old))
        for e in doc.get("metadata-log", []):
            p = e["metadata-file"]
            local = p[len("file://"):] if p.startswith("file://") else p
            if local in mapping:
                e["metadata-file"] = "file://" + mapping[local] if p.startswith("file://") else mapping[local]
        json.dump(doc, open(new, "w"))
        os.remove(old)
    return max(mapping.values(), key=lambda p: int(re.search(r"v(\d+)\.", p).group(1)))


def build(table_dir, format_version, appends, rewrite_all=False, evolve_spec=True):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    table_dir = os.path.abspath(table_dir)
    os.makedirs(table_dir, exist_ok=True)
    location = "file://" + table_dir
    catalog = SqlCatalog("m", uri="sqlite:///:memory:", warehouse=location)
    catalog.create_namespace("m")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "cat", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "cat"))
    table = catalog.create_table(
        "m.t", schema=schema, location=location, partition_spec=spec,
        properties={"format-version": str(format_version)},
    )
    next_id = [0]

    def batch(n, with_score):
        ids = list(range(next_id[0], next_id[0] + n))
        next_id[0] += n
        cols = {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i}" if i % 5 else None for i in ids], pa.string()),
            "cat": pa.array([f"c{i % 3}" for i in ids], pa.string()),
        }
        if with_score:
            cols["score"] = pa.array([i * 0.5 for i in ids], pa.float64())
            cols["region"] = pa.array([f"r{i % 2}" for i in ids], pa.string())
        return pa.table(cols)

    third = max(1, appends // 3)
    for _ in range(third):
        table.append(batch(3, False))
    with table.update_schema() as u:
        u.add_column("score", DoubleType())
        u.add_column("region", StringType())
    for _ in range(third):
        table.append(batch(3, True))
    if evolve_spec:
        with table.update_spec() as u:
            u.add_identity("region")
    for _ in range(appends - 2 * third):
        table.append(batch(3, True))
    if rewrite_all:
        # Every file rewritten under the newest spec and schema: the old ones fall out of use.
        table.overwrite(table.scan().to_arrow())
    table.delete(EqualTo("cat", "c0"))
    table.append(batch(2, True))
    snap = table.current_snapshot().snapshot_id
    table.manage_snapshots().create_branch(snap, "b1").create_tag(snap, "t1").commit()
    table.append(batch(2, True), branch="b1")
    newest = _rename_to_v(table_dir)
    print(json.dumps({"metadata": newest}))


def _rows(arrow):
    rows = arrow.to_pylist()
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def read(metadata_file):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_file)
    md = table.metadata
    refs = {}
    for name, ref in md.refs.items():
        refs[name] = _rows(table.scan(snapshot_id=ref.snapshot_id).to_arrow())
    manifests = table.inspect.manifests().to_pylist()
    entries = []
    for e in table.inspect.entries().to_pylist():
        if e["status"] == 2:
            continue
        df = e["data_file"]
        keep = {k: v for k, v in df.items() if k not in ("readable_metrics",)}
        for k in ("lower_bounds", "upper_bounds", "key_metadata"):
            v = keep.get(k)
            if isinstance(v, list):
                keep[k] = [[kk, bytes(vv).hex()] for kk, vv in v]
            elif isinstance(v, (bytes, bytearray)):
                keep[k] = bytes(v).hex()
        entries.append({
            "snapshot_id": e["snapshot_id"],
            "sequence_number": e["sequence_number"],
            "file_sequence_number": e["file_sequence_number"],
            "data_file": keep,
        })
    entries.sort(key=lambda e: e["data_file"]["file_path"])
    print(json.dumps({
        "refs": refs,
        "manifests": manifests,
        "entries": entries,
        "snapshots": [s.snapshot_id for s in md.snapshots],
        "current": md.current_snapshot_id,
    }, default=str))


def chdb_run(table_dir, statements):
    from chdb import session

    os.chdir("/")
    s = session.Session()
    s.query("SET allow_insert_into_iceberg=1, allow_experimental_iceberg_compaction=1")
    s.query(f"CREATE TABLE t ENGINE = IcebergLocal('{os.path.abspath(table_dir)}')")
    out = []
    for sql in statements:
        out.append(str(s.query(sql, "TabSeparated")).splitlines())
    print(json.dumps(out))


def main(argv):
    if argv[0] == "build":
        extra = argv[4:]
        build(argv[1], int(argv[2]), int(argv[3]), rewrite_all="overwrite" in extra,
              evolve_spec="one_spec" not in extra)
    elif argv[0] == "read":
        read(argv[1])
    elif argv[0] == "chdb":
        chdb_run(argv[1], argv[2:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
