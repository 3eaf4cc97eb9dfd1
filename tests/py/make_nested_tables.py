"""Build pyiceberg tables that live inside one another's locations, or read them.

usage: make_nested_tables.py build ROOT     -- build the tables below, print their facts as JSON
       make_nested_tables.py read PATH...   -- print {"PATH": rows of the current snapshot} per
                                               metadata file (pyiceberg reads every data file)

Layout (every table written by pyiceberg 0.12 through an in-memory SQL catalog):
- `d`  at ROOT: two appends. Its location is the parent of `a`'s.
- `a`  at ROOT/a: two appends and a delete.
- `b`  at ROOT/a/nested_b: append b1, delete everything, append b3; then b1's snapshot is removed
       from the newest metadata file (edited in, as an expiry by another engine would leave it):
       b1's data file and manifest list are reachable only from b's older metadata files.
- `b2` at ROOT/a/data/b: one append (a table inside a's data folder).
- `c`  at ROOT/a/tables/c with `write.data.path` = ROOT/a/data: two appends; its data files lie
       beside a's, its metadata under a's location.
Then planted strays (facts `strays`, name -> path): `a_data`, `a_list` (a's own orphans), `b`, `b2`,
`c` (under those tables' locations), `d` (d's own orphan). Finally every file's mtime is set to ten
days ago, so only reachability and table locations keep a file.
"""

import json
import os
import sys
import time

import pyarrow as pa

DAY_S = 86_400


def _schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
    )


ARROW = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


def _rows(start, count):
    return pa.Table.from_pylist([{"id": i, "name": f"n{i}"} for i in range(start, start + count)], schema=ARROW)


def _local(uri):
    return uri[len("file://") :] if uri.startswith("file://") else uri


def _drop_first_snapshot(metadata_path):
    with open(metadata_path, encoding="utf-8") as f:
        doc = json.load(f)
    first = min(doc["snapshots"], key=lambda s: s["timestamp-ms"])
    doc["snapshots"] = [s for s in doc["snapshots"] if s["snapshot-id"] != first["snapshot-id"]]
    doc["snapshot-log"] = [e for e in doc.get("snapshot-log", []) if e["snapshot-id"] != first["snapshot-id"]]
    with open(metadata_path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return first["manifest-list"]


def build(root):
    from pyiceberg.catalog.sql import SqlCatalog

    root = os.path.abspath(root)
    os.makedirs(root, exist_ok=True)
    catalog = SqlCatalog("nested", uri="sqlite:///:memory:", warehouse="file://" + root)
    catalog.create_namespace("n")

    def create(name, rel, properties=None):
        location = "file://" + (os.path.join(root, rel) if rel else root)
        return catalog.create_table(f"n.{name}", schema=_schema(), location=location, properties=properties or {})

    facts = {"root": root, "tables": {}, "strays": {}}

    def record(name, table, rows):
        table = table.refresh()
        facts["tables"][name] = {
            "location": _local(table.location()),
            "metadata_path": _local(table.metadata_location),
            "rows": rows,
        }

    d = create("d", "")
    d.append(_rows(0, 5))
    d.append(_rows(5, 5))
    record("d", d, 10)

    a = create("a", "a")
    a.append(_rows(100, 10))
    a.append(_rows(110, 10))
    a.delete("id < 105")
    record("a", a, 15)

    b = create("b", "a/nested_b")
    b.append(_rows(200, 4))
    b.delete("id >= 0")
    b.append(_rows(300, 3))
    b = b.refresh()
    b1_list = _drop_first_snapshot(_local(b.metadata_location))
    record("b", b, 3)
    facts["b_only_in_old_metadata"] = _local(b1_list)

    b2 = create("b2", "a/data/b")
    b2.append(_rows(400, 2))
    record("b2", b2, 2)

    c = create("c", "a/tables/c", {"write.data.path": "file://" + os.path.join(root, "a", "data")})
    c.append(_rows(500, 6))
    c.append(_rows(600, 1))
    record("c", c, 7)

    strays = {
        "a_data": "a/data/stray-a.parquet",
        "a_list": "a/metadata/snap-999-1-stray.avro",
        "b": "a/nested_b/data/stray-b.parquet",
        "b2": "a/data/b/data/stray-b2.parquet",
        "c": "a/tables/c/data/stray-c.parquet",
        "d": "data/stray-d.parquet",
    }
    for name, rel in strays.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"stray")
        facts["strays"][name] = path

    old = time.time() - 10 * DAY_S
    for folder, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (old, old))
    return facts


def read(paths):
    from pyiceberg.table import StaticTable

    return {p: StaticTable.from_metadata(p).scan().to_arrow().num_rows for p in paths}


def main(argv):
    if len(argv) == 2 and argv[0] == "build":
        out = build(argv[1])
    elif len(argv) >= 2 and argv[0] == "read":
        out = read(argv[1:])
    else:
        sys.stderr.write(__doc__)
        return 2
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
