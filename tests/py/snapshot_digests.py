"""Row digests of chosen snapshots of one table, as pyiceberg and ClickHouse (chdb) read them: the
check the base-moved property test (tests/interop/base_moved/) makes after every history.

`digests(request)` with request
  {"table": {"kind": "local", "dir": <table folder>, "metadata": <metadata file>}
          | {"kind": "rest", "uri", "warehouse", "namespace", "name"}
          | {"kind": "glue", "database", "name"},
   "s3": <S3 endpoint>, "bucket": <bucket>, "snapshots": [<snapshot id>, ...]}
answers {"<snapshot id>": {"py": [rows, digest] | null, "py_error": <text>?,
                           "ch": [rows, "<sum of cityHash64(*)>"] | null, "ch_error": <text>?}}.

pyiceberg scans the snapshot by id (`digest`: the sum of each row's SHA-256 prefix, mod 2**61, so
the order rows come in does not matter); chdb runs `SELECT count(), sum(cityHash64(*))` with
`iceberg_snapshot_id`, on `icebergLocal(<dir>)` for a path table and through its own
`DataLakeCatalog` database for a REST or Glue table (one per catalog, kept for the next requests).
pyiceberg loads REST and Glue tables through the catalog too. One chdb session serves every
request; a failed query gets a fresh one (chdb 4.4 hands a failed query's leftovers to the next
query of the same session).
"""

import hashlib
import itertools
import json

KEY = "testing"
REGION = "us-east-1"

_state = {"session": None, "numbers": itertools.count(), "databases": {}, "catalogs": {}}


def _session():
    import chdb_session

    if _state["session"] is None:
        sess = chdb_session.open_session()
        chdb_session.run(sess, "SET allow_database_iceberg = 1")
        chdb_session.run(sess, "SET allow_database_glue_catalog = 1")
        _state["session"] = sess
    return _state["session"]


def _reset_session():
    sess = _state["session"]
    _state["session"] = None
    _state["databases"] = {}
    if sess is not None:
        try:
            sess.close()
        except Exception:  # noqa: BLE001 - a broken session is dropped either way
            pass


def _row_digest(arrow):
    names = arrow.column_names
    total = 0
    columns = [arrow.column(n).to_pylist() for n in names]
    for values in zip(*columns):
        text = json.dumps(dict(zip(names, values)), sort_keys=True, default=str)
        total = (total + int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)) % (2**61)
    return total


def _catalog(spec, s3):
    """pyiceberg's client of the table's catalog, made once per catalog."""
    key = (spec["kind"], spec.get("uri"), spec.get("warehouse"), s3)
    catalog = _state["catalogs"].get(key)
    if catalog is None:
        if spec["kind"] == "glue":
            import glue_fixture

            catalog = glue_fixture.catalog(s3, s3)
        else:
            from pyiceberg.catalog import load_catalog

            catalog = load_catalog(
                "rest",
                **{
                    "type": "rest",
                    "uri": spec["uri"],
                    "warehouse": spec["warehouse"],
                    "s3.endpoint": s3,
                    "s3.access-key-id": KEY,
                    "s3.secret-access-key": KEY,
                    "s3.region": REGION,
                },
            )
        _state["catalogs"][key] = catalog
    return catalog


def _pyiceberg_table(spec, s3):
    if spec["kind"] == "local":
        from pyiceberg.table import StaticTable

        return StaticTable.from_metadata(spec["metadata"])
    if spec["kind"] == "glue":
        return _catalog(spec, s3).load_table(f"{spec['database']}.{spec['name']}")
    return _catalog(spec, s3).load_table((*spec["namespace"].split("."), spec["name"]))


def _ch_source(sess, spec, s3, bucket):
    """The FROM clause that reads the table in chdb (its catalog's database is created once)."""
    import chdb_session

    kind = spec["kind"]
    if kind == "local":
        return f"icebergLocal({chdb_session.sql_string(spec['dir'])})"
    if kind == "rest":
        key = ("rest", spec["uri"], spec["warehouse"])
        settings = (
            f"catalog_type = 'rest', warehouse = '{spec['warehouse']}', "
            f"storage_endpoint = '{s3}/{bucket}', aws_access_key_id = '{KEY}', "
            f"aws_secret_access_key = '{KEY}', region = '{REGION}', vended_credentials = 0"
        )
        url = f"{spec['uri']}/v1"
        table = f"{spec['namespace']}.{spec['name']}"
    else:
        key = ("glue", s3)
        settings = (
            f"catalog_type = 'glue', region = '{REGION}', aws_access_key_id = '{KEY}', "
            f"aws_secret_access_key = '{KEY}', storage_endpoint = '{s3}'"
        )
        url = s3
        table = f"{spec['database']}.{spec['name']}"
    db = _state["databases"].get(key)
    if db is None:
        db = f"base_moved_{next(_state['numbers'])}"
        chdb_session.run(sess, f"CREATE DATABASE {db} ENGINE = DataLakeCatalog('{url}') SETTINGS {settings}")
        _state["databases"][key] = db
    return f"{db}.`{table}`"


def _clickhouse(spec, s3, bucket, snapshot_ids, out):
    import chdb_session

    for sid in snapshot_ids:
        entry = out[str(sid)]
        try:
            sess = _session()
            _, rows = chdb_session.run(
                sess,
                f"SELECT count(), toString(sum(cityHash64(*))) FROM {_ch_source(sess, spec, s3, bucket)} "
                f"SETTINGS iceberg_snapshot_id = {sid}",
            )
            entry["ch"] = [int(rows[0][0]), rows[0][1]]
        except Exception as e:  # noqa: BLE001 - reported, the test decides
            entry["ch"] = None
            entry["ch_error"] = str(e)[:1000]
            _reset_session()


def digests(request):
    spec, s3, bucket = request["table"], request.get("s3", ""), request.get("bucket", "")
    snapshot_ids = request["snapshots"]
    out = {str(sid): {} for sid in snapshot_ids}
    table = _pyiceberg_table(spec, s3)
    for sid in snapshot_ids:
        entry = out[str(sid)]
        try:
            arrow = table.scan(snapshot_id=sid).to_arrow()
            entry["py"] = [arrow.num_rows, _row_digest(arrow)]
        except Exception as e:  # noqa: BLE001 - reported, the test decides
            entry["py"] = None
            entry["py_error"] = f"{type(e).__name__}: {e}"[:1000]
    _clickhouse(spec, s3, bucket, snapshot_ids, out)
    return out
