"""Runs one statement on ClickHouse (chdb) against an `IcebergS3` table on the S3 emulator, through a
request-counting proxy, for the benchmark's request counts (scenario 5).

usage: bench_clickhouse_s3.py <endpoint> <bucket> <table_prefix> <sql>

The proxy listens on a local port and forwards every request unchanged to <endpoint>; it counts
requests by kind as S3 names them: GET (GetObject), HEAD, LIST (ListObjects), PUT, DELETE (one
DeleteObject, or one DeleteObjects batch: its keys are counted apart) and POST (anything else).
Attaching the table (`CREATE TABLE`) is not counted; the statement alone is. Prints one JSON line:
{"seconds": s, "rows": [[name, value], ...], "requests": {kind: n}, "deleted_keys": n} or
{"error": text}.
"""

import http.client
import json
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import chdb_session  # noqa: E402

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.on = False
        self.kinds = {}
        self.deleted_keys = 0

    def add(self, kind: str, keys: int = 0):
        with self.lock:
            if self.on:
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
                self.deleted_keys += keys


def kind_of(method: str, path: str, query: dict) -> str:
    key = path.lstrip("/").partition("/")[2]
    if method == "GET" and (not key or "list-type" in query):
        return "LIST"
    if method == "POST" and "delete" in query:
        return "DELETE"
    return method


def make_handler(upstream: urllib.parse.ParseResult, counts: Counts):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))

        def forward(self):
            data = self.body()
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            kind = kind_of(self.command, url.path, query)
            keys = len(re.findall(rb"<Key>", data)) if kind == "DELETE" and data else 0
            if kind == "DELETE" and not keys:
                keys = 1
            counts.add(kind, keys)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Content-Length"] = str(len(data))
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=300)
            try:
                conn.request(self.command, self.path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            finally:
                conn.close()
            self.send_response_only(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            # A HEAD's length is the object's (ClickHouse sizes its reads by it), not the body's.
            length = resp.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    return Handler


def main() -> int:
    endpoint, bucket, prefix, sql = sys.argv[1:5]
    counts = Counts()
    handler = make_handler(urllib.parse.urlparse(endpoint), counts)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{bucket}/{prefix.strip('/')}/"
    sess = chdb_session.open_session()
    chdb_session.run(
        sess,
        f"CREATE TABLE t ENGINE = IcebergS3({chdb_session.sql_string(url)}, 'bench', 'bench')",
    )
    counts.on = True
    reply = chdb_session.timed(sess, sql)
    counts.on = False
    server.shutdown()
    if "error" not in reply:
        reply.update(requests=counts.kinds, deleted_keys=counts.deleted_keys)
    print(json.dumps(reply))
    return 1 if "error" in reply else 0

if __name__ == "__main__":
    sys.exit(main())
