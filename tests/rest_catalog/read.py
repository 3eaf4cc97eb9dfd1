#!/usr/bin/env python3
"""Read a table through the test REST catalog with the two other engines, as a conformance check:

  pyiceberg's RestCatalog client: every ref's rows (count and an order-independent digest);
  ClickHouse (chdb): a DataLakeCatalog database on the catalog, the table's current rows.

Usage: read.py URI WAREHOUSE NAMESPACE TABLE S3_ENDPOINT BUCKET [CREDENTIAL]
Prints {"pyiceberg": {ref: [rows, digest]}, "clickhouse": [rows, rows],
"clickhouse_refs": {ref: [rows, digest]}} (digest: the sum of each row's hash, mod 2**61; ClickHouse
reads every ref pyiceberg lists by its snapshot id) or {"error": "..."}. TABLE may name several
tables, comma-separated (one process, one chdb session): then it prints {TABLE: that object, ...}.

A URI `glue+ENDPOINT` reads through AWS Glue at ENDPOINT (moto) instead: pyiceberg's
`GlueCatalog` and a ClickHouse Glue `DataLakeCatalog`; NAMESPACE is the Glue database, WAREHOUSE
is ignored.
"""

import hashlib
import json
import sys


def digest(rows):
    total = 0
    for row in rows:
        text = json.dumps(row, sort_keys=True, default=str)
        total = (total + int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)) % (2**61)
    return total


def arrow_rows(arrow):
    names = arrow.column_names
    return [dict(zip(names, values)) for values in zip(*(arrow.column(n).to_pylist() for n in names))]


def main(argv):
    uri, warehouse, namespace, tables, s3, bucket = argv[1:7]
    credential = argv[7] if len(argv) > 7 else None
    from pyiceberg.catalog import load_catalog

    props = {
        "type": "rest",
        "uri": uri,
        "warehouse": warehouse,
        "s3.endpoint": s3,
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
        "s3.region": "us-east-1",
    }
    if credential:
        props["credential"] = credential
    import chdb

    session = chdb.session.Session()
    if uri.startswith("glue+"):
        glue = uri[len("glue+"):]
        catalog = load_catalog(
            "glue",
            **{
                "type": "glue",
                "glue.endpoint": glue,
                "glue.region": "us-east-1",
                "glue.access-key-id": "testing",
                "glue.secret-access-key": "testing",
                **{k: v for k, v in props.items() if k.startswith("s3.")},
            },
        )
        session.query("SET allow_database_glue_catalog = 1")
        session.query(
            f"CREATE DATABASE lake ENGINE = DataLakeCatalog('{glue}') SETTINGS catalog_type = 'glue', "
            f"region = 'us-east-1', aws_access_key_id = 'testing', aws_secret_access_key = 'testing', "
            f"storage_endpoint = '{s3}'"
        )
    else:
        catalog = load_catalog("rest", **props)
        session.query("SET allow_database_iceberg = 1")
        auth = f", catalog_credential = '{credential}'" if credential else ""
        session.query(
            f"CREATE DATABASE lake ENGINE = DataLakeCatalog('{uri}/v1') SETTINGS catalog_type = 'rest', "
            f"warehouse = '{warehouse}', storage_endpoint = '{s3}/{bucket}', "
            f"aws_access_key_id = 'testing', aws_secret_access_key = 'testing', region = 'us-east-1', "
            f"vended_credentials = 0{auth}"
        )
    names = tables.split(",")
    outs = {name: read_table(catalog, session, namespace, name) for name in names}
    print(json.dumps(outs if len(names) > 1 else outs[names[0]]))
    return 0


def read_table(catalog, session, namespace, table):
    t = catalog.load_table((*namespace.split("."), table))
    out = {"pyiceberg": {}}
    for name, ref in t.metadata.refs.items():
        rows = arrow_rows(t.scan(snapshot_id=ref.snapshot_id).to_arrow())
        out["pyiceberg"][name] = [len(rows), digest(rows)]
    def clickhouse_rows(settings=""):
        result = session.query(f"SELECT * FROM lake.`{namespace}.{table}`{settings}", "JSONEachRow")
        return [json.loads(line) for line in result.bytes().decode().splitlines() if line.strip()]

    rows = clickhouse_rows()
    out["clickhouse"] = [len(rows), len(rows)]
    out["clickhouse_refs"] = {}
    for name, ref in t.metadata.refs.items():
        rows = clickhouse_rows(f" SETTINGS iceberg_snapshot_id = {ref.snapshot_id}")
        out["clickhouse_refs"][name] = [len(rows), digest(rows)]
    return out


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # noqa: BLE001
        import traceback

        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.exit(0)
