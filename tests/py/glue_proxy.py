#!/usr/bin/env python3
"""A Glue front for tests: forwards every request to moto's Glue (UPSTREAM) and adds what moto
lacks, so icetrim's Glue commit protocol can be tested on its failure paths.

    glue_proxy.py UPSTREAM S3_ENDPOINT      prints the port it listens on (127.0.0.1), then serves

- **VersionId is enforced** (moto ignores it): an `UpdateTable` whose `VersionId` is not the
  table's current one is answered `400 ConcurrentModificationException` and not forwarded, as AWS
  Glue does. Check and forward happen under one lock.
- **Credentials**: with `require_key` set, a request signed with another access key id is answered
  `400 UnrecognizedClientException` (AWS's answer to an unknown key).
- Failure injection, set with `POST /__proxy__/mode` (JSON, fields below; each counter is
  decremented as it fires), read back with `GET /__proxy__/stats`:
  - `conflicts`: N — before the next N `UpdateTable`s, a concurrent writer (pyiceberg's
    `GlueCatalog` on UPSTREAM) appends one row to the same table, so the request's VersionId is
    stale and it is refused (a real concurrent commit between icetrim's `GetTable` and
    `UpdateTable`). The writer's ids start at 1000.
  - `bumps`: N — before the next N `UpdateTable`s, someone else edits the Glue table (a parameter
    `bumped_by_proxy` = a counter, through UPSTREAM): the VersionId moves, the Iceberg pointer does
    not (a cheap concurrent change).
  - `drop_update_response`: N — the next N `UpdateTable`s are forwarded (they land) but the
    connection is closed without an answer (a lost response).
  - `swallow_update`: N — the next N `UpdateTable`s are not forwarded and the connection is closed
    without an answer (a request lost on the way).
  - `fail_get_table`: N — the next N `GetTable`s answer `500 InternalServiceException`.
  - `fail_get_table_after_loss`: N — when an update is dropped or swallowed, `fail_get_table`
    becomes N (the confirming reads fail too: the outcome cannot be known).
  - `require_key`: an access key id, or null for any.
  - `optimizers`: {"DATABASE.TABLE": {"compaction" | "retention" | "orphan_file_deletion": enabled}}
    — answered by the proxy (moto lacks `BatchGetTableOptimizer`).
Stats: `ops` (count per Glue operation), `conflicts_injected`, `writer_snapshots`,
`updates_dropped`, `updates_swallowed`.
"""

import http.client
import json
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LOCK = threading.Lock()
STATE = {
    "mode": {
        "conflicts": 0,
        "bumps": 0,
        "drop_update_response": 0,
        "swallow_update": 0,
        "fail_get_table": 0,
        "fail_get_table_after_loss": 0,
        "require_key": None,
        "optimizers": {},
    },
    "stats": {
        "ops": {},
        "conflicts_injected": 0,
        "bumps_injected": 0,
        "writer_snapshots": [],
        "updates_dropped": 0,
        "updates_swallowed": 0,
    },
}
UPSTREAM = None
S3_ENDPOINT = None
WRITER_NEXT_ID = [1000]


def upstream_request(method, path, headers, body):
    parsed = urllib.parse.urlsplit(UPSTREAM)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        conn.close()


def glue_call(operation, payload):
    """Call UPSTREAM's Glue directly (unsigned: moto does not check signatures)."""
    headers = {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": f"AWSGlue.{operation}",
        "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/glue/aws4_request, "
        "SignedHeaders=host, Signature=0",
    }
    status, _headers, body = upstream_request("POST", "/", headers, json.dumps(payload).encode())
    return status, json.loads(body or b"{}")


def concurrent_append(database, table):
    import glue_fixture

    catalog = glue_fixture.catalog(UPSTREAM, S3_ENDPOINT)
    t = catalog.load_table(f"{database}.{table}")
    first = WRITER_NEXT_ID[0]
    WRITER_NEXT_ID[0] += 1
    t.append(glue_fixture._rows(first, 1))
    return t.metadata.current_snapshot_id


def bump(database, table, n):
    """Edit the Glue table behind everybody's back: a parameter changes, so does the VersionId."""
    _status, current = glue_call("GetTable", {"DatabaseName": database, "Name": table})
    found = current["Table"]
    table_input = {
        k: found[k]
        for k in ("Name", "Description", "Owner", "StorageDescriptor", "PartitionKeys", "TableType", "Parameters")
        if k in found
    }
    table_input.setdefault("Parameters", {})["bumped_by_proxy"] = str(n)
    glue_call("UpdateTable", {"DatabaseName": database, "TableInput": table_input})


def access_key_of(headers):
    match = re.search(r"Credential=([^/,\s]+)/", headers.get("Authorization", ""))
    return match.group(1) if match else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args):
        pass

    def _answer(self, status, body, content_type="application/x-amz-json-1.1", extra=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, kind, message):
        self._answer(status, {"__type": kind, "message": message}, extra=[("x-amzn-ErrorType", kind)])

    def _drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def do_GET(self):
        if self.path == "/__proxy__/stats":
            with LOCK:
                self._answer(200, STATE["stats"], "application/json")
            return
        self._forward(b"")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/__proxy__/mode":
            with LOCK:
                STATE["mode"].update(json.loads(body or b"{}"))
                self._answer(200, STATE["mode"], "application/json")
            return
        target = self.headers.get("X-Amz-Target", "")
        operation = target.split(".", 1)[1] if target.startswith("AWSGlue.") else None
        if operation is None:
            self._forward(body)
            return
        with LOCK:
            ops = STATE["stats"]["ops"]
            ops[operation] = ops.get(operation, 0) + 1
            mode = STATE["mode"]
            required = mode["require_key"]
            if required is not None and access_key_of(self.headers) != required:
                self._error(
                    400,
                    "UnrecognizedClientException",
                    "The security token included in the request is invalid.",
                )
                return
            if operation == "GetTable" and mode["fail_get_table"] > 0:
                mode["fail_get_table"] -= 1
                self._error(500, "InternalServiceException", "injected failure")
                return
            if operation == "UpdateTable":
                self._update_table(body)
                return
            if operation == "BatchGetTableOptimizer":
                self._table_optimizers(body)
                return
        self._forward(body)

    def _table_optimizers(self, body):
        """Under LOCK. Answers from `optimizers` as AWS Glue does: each asked optimizer that
        exists (enabled or not) in `TableOptimizers`, each missing one in `Failures`."""
        found, failures = [], []
        for entry in json.loads(body or b"{}").get("Entries", []):
            key = f"{entry.get('databaseName')}.{entry.get('tableName')}"
            kind = entry.get("type")
            state = STATE["mode"]["optimizers"].get(key, {}).get(kind)
            names = {k: entry.get(k) for k in ("catalogId", "databaseName", "tableName")}
            if state is None:
                error = {"ErrorCode": "EntityNotFoundException", "ErrorMessage": "no optimizer"}
                failures.append({**names, "type": kind, "error": error})
                continue
            configuration = {"roleArn": "arn:aws:iam::123456789012:role/optimizer", "enabled": state}
            found.append({**names, "tableOptimizer": {"type": kind, "configuration": configuration}})
        self._answer(200, {"TableOptimizers": found, "Failures": failures}, "application/x-amz-json-1.1")

    def _update_table(self, body):
        """Under LOCK."""
        mode = STATE["mode"]
        stats = STATE["stats"]
        request = json.loads(body or b"{}")
        database = request.get("DatabaseName")
        table = (request.get("TableInput") or {}).get("Name")
        if mode["swallow_update"] > 0:
            mode["swallow_update"] -= 1
            stats["updates_swallowed"] += 1
            mode["fail_get_table"] = mode["fail_get_table_after_loss"]
            self._drop()
            return
        if mode["conflicts"] > 0:
            mode["conflicts"] -= 1
            stats["conflicts_injected"] += 1
            try:
                stats["writer_snapshots"].append(concurrent_append(database, table))
            except Exception as e:  # noqa: BLE001 - said to the client, not swallowed
                print(f"glue_proxy: the concurrent writer failed: {e!r}", file=sys.stderr, flush=True)
                self._error(500, "InternalServiceException", f"proxy writer failed: {e!r}")
                return
        if mode["bumps"] > 0:
            mode["bumps"] -= 1
            stats["bumps_injected"] += 1
            bump(database, table, stats["bumps_injected"])
        if request.get("VersionId") is not None:
            status, current = glue_call("GetTable", {"DatabaseName": database, "Name": table})
            if status == 200:
                current_version = current.get("Table", {}).get("VersionId")
                if current_version != request["VersionId"]:
                    self._error(
                        400,
                        "ConcurrentModificationException",
                        f"Table version {request['VersionId']} is not the current version "
                        f"{current_version}",
                    )
                    return
        if mode["drop_update_response"] > 0:
            mode["drop_update_response"] -= 1
            stats["updates_dropped"] += 1
            mode["fail_get_table"] = mode["fail_get_table_after_loss"]
            upstream_request("POST", self.path, dict(self.headers), body)
            self._drop()
            return
        self._forward(body)

    def _forward(self, body):
        headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
        status, response_headers, data = upstream_request(self.command, self.path, headers, body)
        self.send_response(status)
        for name, value in response_headers:
            if name.lower() in ("content-length", "connection", "transfer-encoding", "date", "server"):
                continue
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _warm_up():
    import glue_fixture  # noqa: F401
    import pyarrow  # noqa: F401
    import pyiceberg.catalog.glue  # noqa: F401


def main(argv):
    global UPSTREAM, S3_ENDPOINT
    UPSTREAM, S3_ENDPOINT = argv[0].rstrip("/"), argv[1].rstrip("/")
    # The concurrent writer's imports take seconds (more on a loaded machine): done before the
    # port is announced, never inside an UpdateTable.
    _warm_up()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
