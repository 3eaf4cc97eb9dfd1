#!/usr/bin/env python3
"""An S3 front for tests that enforces session-token expiry as AWS does (moto does not): forwards
every request to moto (UPSTREAM) unless its `x-amz-security-token` has expired, which is answered
`400 ExpiredToken` (with the token repeated in `<Token-0>`, as AWS does).

    expiring_s3_proxy.py UPSTREAM      prints the port it listens on (127.0.0.1), then serves

Tokens the test REST catalog vends are `vended.<expires-at-ms>.<n>`: expired once that time has
passed. Modes (`POST /__proxy__/mode`, JSON):
  - `requests_per_token`: N — a token also expires after N requests were forwarded with it
    (credentials that run out in the middle of a statement, deterministically);
  - `expire_all`: true — every vended token is answered `ExpiredToken` (a storage that keeps
    refusing);
  - `delay_ms`: N — each request is held N ms before it is forwarded (a slow statement).
`GET /__proxy__/stats`: {"forwarded", "expired", "deletes", "tokens"} (deletes: forwarded DELETE and
bulk-delete requests; tokens: distinct vended tokens seen).
"""

import http.client
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
MODE = {"requests_per_token": 0, "expire_all": False, "delay_ms": 0}
STATS = {"forwarded": 0, "expired": 0, "deletes": 0}
USES = {}  # token -> forwarded requests
UPSTREAM = None


def expired(token):
    if not token or not token.startswith("vended."):
        return False
    if MODE["expire_all"]:
        return True
    parts = token.split(".")
    try:
        if int(time.time() * 1000) >= int(parts[1]):
            return True
    except (IndexError, ValueError):
        return True
    limit = MODE["requests_per_token"]
    return bool(limit) and USES.get(token, 0) >= limit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, body, content_type="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def admin(self, raw):
        with LOCK:
            if self.path.startswith("/__proxy__/mode"):
                MODE.update(json.loads(raw or b"{}"))
            stats = dict(STATS, tokens=len(USES))
        return self.answer(200, json.dumps(stats).encode())

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith("/__proxy__/"):
            return self.admin(raw)
        if MODE["delay_ms"]:
            time.sleep(MODE["delay_ms"] / 1000)
        token = self.headers.get("x-amz-security-token")
        with LOCK:
            refuse = expired(token)
            if refuse:
                STATS["expired"] += 1
            else:
                STATS["forwarded"] += 1
                if token:
                    USES[token] = USES.get(token, 0) + 1
                query = urllib.parse.urlsplit(self.path).query
                if self.command == "DELETE" or (self.command == "POST" and "delete" in query):
                    STATS["deletes"] += 1
        if refuse:
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ExpiredToken</Code>'
                "<Message>The provided token has expired.</Message>"
                f"<Token-0>{token}</Token-0><RequestId>PROXY</RequestId></Error>"
            ).encode()
            return self.answer(400, body, "application/xml")
        upstream = urllib.parse.urlsplit(UPSTREAM)
        conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        conn.request(self.command, self.path, body=raw, headers=headers)
        response = conn.getresponse()
        data = response.read()
        self.send_response(response.status)
        for k, v in response.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(k, v)
        if self.command == "HEAD":
            self.send_header("Content-Length", response.getheader("Content-Length") or "0")
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()
        return None

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


def main():
    global UPSTREAM
    UPSTREAM = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
