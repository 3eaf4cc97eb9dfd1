#!/usr/bin/env python3
"""A small Iceberg REST catalog for the tests: HTTP in front of pyiceberg's SqlCatalog on SQLite.

pyiceberg validates every requirement and applies every update (`SqlCatalog.commit_table`); this
file only maps HTTP to it, as the Iceberg REST OpenAPI spec names the routes:

  GET  /v1/config?warehouse=W                    -> {"defaults": {}, "overrides": {"prefix": W}}
  POST /v1/oauth/tokens                          -> OAuth2 client credentials (per warehouse)
  GET  /v1/{W}/namespaces[?parent=a%1Fb]          -> {"namespaces": [[...], ...]}
  GET  /v1/{W}/namespaces/{ns}/tables             -> {"identifiers": [...]}
  GET  /v1/{W}/namespaces/{ns}/tables/{t}         -> LoadTableResult (vended credentials when asked)
  POST /v1/{W}/namespaces/{ns}/tables/{t}         -> CommitTableResponse; 409 CommitFailedException,
                                                   400 ValueError, 404 unknown table or namespace
  GET  /v1/{W}/namespaces/{ns}/tables/{t}/credentials -> {"storage-credentials": [...]}

A warehouse is a catalog of its own (a SqlCatalog named after it, all in one SQLite file) with its
own behaviour, so concurrent tests do not see each other's tables. Test hooks (no auth):

  POST /admin/warehouse {"name", "client_id"?, "client_secret"?, "token"?, "vend"?, "expiring"?}
       client_id/secret: OAuth2 required (tokens from /v1/oauth/tokens); token: that bearer
       required; vend: answer vended S3 credentials when X-Iceberg-Access-Delegation asks;
       expiring: the load's vended credentials expire within a second and name a dead endpoint
       (only those of GET .../credentials work); hang_loads: table loads answer after 30 s;
       delay_loads_ms: table loads answer after that many ms;
       config_storage: GET /v1/config's `defaults` carry the S3 emulator's endpoint and keys;
       lifetime_ms: vended session tokens `vended.<expires-at-ms>.<n>` that expire after that
       long (tests/py/expiring_s3_proxy.py enforces it), advertised in
       `s3.session-token-expires-at-ms` (advertise_ms: advertise that lifetime instead);
       s3_endpoint: the endpoint to vend (e.g. that proxy); expired_vends: N: the next N
       credentials vended (loads and refreshes alike) had expired an hour before;
       throttle: {"status", "count", "retry_after"?}: the next `count` catalog requests answer
       `status` (429, 503) with that Retry-After header;
       azure: {"endpoint", "key"}: the warehouse's tables live on azurite (pyiceberg reaches
       them with the account key, azurite_io.py); vend an account SAS token
       (`adls.sas-token.<account host>`, valid lifetime_ms or an hour) and the blob endpoint
       (`adls.connection-string.<account host>`) instead of S3 keys.
  POST /admin/register {"warehouse", "namespace": [...], "name", "metadata_location"}
  POST /admin/set-metadata {"warehouse", "namespace": [...], "name", "metadata_location"}: the table's
       current metadata becomes that file, whatever it holds (another writer's commit that pyiceberg's
       catalog cannot make itself, such as a format version 3 upgrade)
  POST /admin/fail {"warehouse", "namespace": [...], "name", "mode"}: the next commit of that table answers
       "500" (not applied), "commit-then-500" (applied, then 500), "commit-then-drop" (applied,
       then the connection is closed without an answer), "400-list" (400 to a remove-snapshots
       update with several ids, for every commit until cleared with mode "none"),
       "hang" (no answer for 30 s), "append-first" (a concurrent writer appends a copy of one row
       through the catalog just before the commit is applied, so its requirements fail: 409),
       "commit-then-drop-blind" (applied, connection closed, and the next load of the table
       answers 500), "truncate-load" (the next load answers half a JSON document).
  POST /admin/expire-tokens: every token issued so far stops working (401 → the client refreshes).
  GET  /admin/log: the requests seen: [{"method", "path", "query", "auth", "delegation", "time", "body"}].

Usage: server.py --port P --db /path/catalog.db --warehouse s3://bucket/prefix --s3-endpoint URL
Prints "ready <port>" on stdout once listening.
"""

import argparse
import json
import secrets
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
)
from pyiceberg.table import CommitTableRequest

SEPARATOR = "\x1f"


class State:
    def __init__(self, args):
        self.args = args
        self.catalogs = {}
        self.s3_endpoint = args.s3_endpoint
        self.lock = threading.RLock()
        self.warehouses = {}  # name -> behaviour
        self.tokens = {}  # token -> the warehouses whose client credentials it was issued for
        self.failures = {}  # (warehouse, namespace tuple, name) -> mode
        self.blind_loads = {}  # (warehouse, namespace tuple, name) -> loads left to refuse
        self.vended = 0  # vended credentials so far (numbers the session tokens)
        self.log = []


STATE = None


def catalog_for(warehouse):
    """The SqlCatalog of `warehouse` (created on first use)."""
    with STATE.lock:
        catalog = STATE.catalogs.get(warehouse)
        if catalog is None:
            args = STATE.args
            props = {
                "s3.endpoint": args.s3_endpoint,
                "s3.access-key-id": "testing",
                "s3.secret-access-key": "testing",
                "s3.region": "us-east-1",
            }
            azure = STATE.warehouses.get(warehouse, {}).get("azure")
            if azure:
                props.update(
                    {
                        "py-io-impl": "azurite_io.AzuriteFileIO",
                        "adls.account-key": azure["key"],
                        "azurite.endpoint": azure["endpoint"],
                    }
                )
            catalog = SqlCatalog(
                warehouse or "default",
                uri=f"sqlite:///{args.db}",
                warehouse=args.warehouse,
                **props,
            )
            STATE.catalogs[warehouse] = catalog
        return catalog


def error_body(code, kind, message):
    return {"error": {"message": message, "type": kind, "code": code}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    # --- plumbing -----------------------------------------------------------------------------

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        self.route("GET", b"")

    def do_POST(self):
        self.route("POST", self.body())

    def do_DELETE(self):
        self.route("DELETE", self.body())

    def route(self, method, raw):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        with STATE.lock:
            STATE.log.append(
                {
                    "method": method,
                    "path": url.path,
                    "query": url.query,
                    "auth": self.headers.get("Authorization"),
                    "delegation": self.headers.get("X-Iceberg-Access-Delegation"),
                    "time": time.time(),
                    "body": raw.decode("utf-8", "replace") if raw else None,
                }
            )
        try:
            if parts[:1] == ["admin"]:
                return self.admin(method, parts[1:], raw)
            if parts[:1] != ["v1"]:
                return self.send_json(404, error_body(404, "NotFound", "no such route"))
            rest = parts[1:]
            if rest == ["oauth", "tokens"] and method == "POST":
                return self.oauth(raw)
            if rest == ["config"]:
                warehouse = query.get("warehouse", "")
                if not self.authorized(warehouse):
                    return
                defaults = {}
                if self.behaviour(warehouse).get("config_storage"):
                    defaults = {
                        "s3.endpoint": STATE.s3_endpoint,
                        "s3.access-key-id": "testing",
                        "s3.secret-access-key": "testing",
                        "client.region": "us-east-1",
                    }
                return self.send_json(
                    200, {"defaults": defaults, "overrides": {"prefix": warehouse}}
                )
            if not rest:
                return self.send_json(404, error_body(404, "NotFound", "no such route"))
            warehouse, rest = rest[0], rest[1:]
            if not self.authorized(warehouse):
                return
            if self.throttled(warehouse):
                return
            return self.catalog_route(method, warehouse, rest, query, raw)
        except (NoSuchTableError, NoSuchNamespaceError) as e:
            kind = "NoSuchTableException" if isinstance(e, NoSuchTableError) else "NoSuchNamespaceException"
            return self.send_json(404, error_body(404, kind, str(e)))
        except CommitFailedException as e:
            return self.send_json(409, error_body(409, "CommitFailedException", str(e)))
        except (ValueError, KeyError) as e:
            return self.send_json(400, error_body(400, "BadRequestException", str(e)))
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            return self.send_json(500, error_body(500, type(e).__name__, str(e)))

    # --- auth ---------------------------------------------------------------------------------

    def behaviour(self, warehouse):
        with STATE.lock:
            return STATE.warehouses.get(warehouse, {})

    def throttled(self, warehouse):
        """Answer the warehouse's `throttle` status (with its Retry-After) while its count lasts."""
        with STATE.lock:
            throttle = STATE.warehouses.get(warehouse, {}).get("throttle")
            if not throttle or throttle.get("count", 0) <= 0:
                return False
            throttle["count"] -= 1
        code = throttle.get("status", 429)
        data = json.dumps(error_body(code, "SlowDownException", "slow down")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if throttle.get("retry_after") is not None:
            self.send_header("Retry-After", str(throttle["retry_after"]))
        self.end_headers()
        self.wfile.write(data)
        return True

    def authorized(self, warehouse):
        b = self.behaviour(warehouse)
        wanted = b.get("client_id") is not None or b.get("token") is not None
        if not wanted:
            return True
        header = self.headers.get("Authorization") or ""
        token = header[len("Bearer ") :] if header.startswith("Bearer ") else None
        ok = False
        if token is not None:
            if b.get("token") is not None and token == b["token"]:
                ok = True
            with STATE.lock:
                owner = STATE.tokens.get(token)
            if owner is not None and warehouse in owner:
                ok = True
        if not ok:
            self.send_json(
                401,
                error_body(401, "NotAuthorizedException", "Not authorized: a valid bearer token is required"),
            )
        return ok

    def oauth(self, raw):
        form = dict(urllib.parse.parse_qsl(raw.decode()))
        if form.get("grant_type") != "client_credentials":
            return self.send_json(400, {"error": "unsupported_grant_type"})
        with STATE.lock:
            owners = [
                name
                for name, b in STATE.warehouses.items()
                if b.get("client_id") is not None
                and b.get("client_id") == form.get("client_id")
                and b.get("client_secret") == form.get("client_secret")
            ]
            if not owners:
                return self.send_json(
                    401, {"error": "invalid_client", "error_description": "unknown client or wrong secret"}
                )
            token = secrets.token_hex(16)
            STATE.tokens[token] = set(owners)
        return self.send_json(
            200,
            {
                "access_token": token,
                "token_type": "bearer",
                "expires_in": 3600,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            },
        )

    # --- admin --------------------------------------------------------------------------------

    def admin(self, method, parts, raw):
        body = json.loads(raw or b"{}")
        if parts == ["warehouse"]:
            with STATE.lock:
                STATE.warehouses[body["name"]] = body
            return self.send_json(200, {})
        if parts == ["register"]:
            ns = tuple(body["namespace"])
            catalog = catalog_for(body["warehouse"])
            with STATE.lock:
                for i in range(1, len(ns) + 1):
                    try:
                        catalog.create_namespace(ns[:i])
                    except NamespaceAlreadyExistsError:
                        pass
                catalog.register_table(ns + (body["name"],), body["metadata_location"])
            return self.send_json(200, {})
        if parts == ["set-metadata"]:
            ident = tuple(body["namespace"]) + (body["name"],)
            catalog = catalog_for(body["warehouse"])
            with STATE.lock:
                # SqlCatalog's drop_table forgets the table without touching its files.
                catalog.drop_table(ident)
                catalog.register_table(ident, body["metadata_location"])
            return self.send_json(200, {})
        if parts == ["fail"]:
            with STATE.lock:
                key = (body["warehouse"], tuple(body["namespace"]), body["name"])
                if body["mode"] == "none":
                    STATE.failures.pop(key, None)
                else:
                    STATE.failures[key] = body["mode"]
            return self.send_json(200, {})
        if parts == ["expire-tokens"]:
            with STATE.lock:
                STATE.tokens.clear()
            return self.send_json(200, {})
        if parts == ["log"]:
            with STATE.lock:
                return self.send_json(200, list(STATE.log))
        return self.send_json(404, error_body(404, "NotFound", "no such admin route"))

    # --- catalog ------------------------------------------------------------------------------

    def catalog_route(self, method, warehouse, rest, query, raw):
        catalog = catalog_for(warehouse)
        if rest == ["namespaces"] and method == "GET":
            parent = query.get("parent")
            with STATE.lock:
                if parent:
                    listed = catalog.list_namespaces(tuple(parent.split(SEPARATOR)))
                else:
                    listed = catalog.list_namespaces()
            return self.send_json(200, {"namespaces": [list(n) for n in listed]})
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] == "tables":
            namespace = tuple(rest[1].split(SEPARATOR))
            if len(rest) == 3 and method == "GET":
                with STATE.lock:
                    listed = catalog.list_tables(namespace)
                ids = [{"namespace": list(t[:-1]), "name": t[-1]} for t in listed]
                return self.send_json(200, {"identifiers": ids})
            if len(rest) >= 4:
                name = rest[3]
                if len(rest) == 5 and rest[4] == "credentials" and method == "GET":
                    return self.send_json(
                        200, {"storage-credentials": self.vended(warehouse, force=True)[1]}
                    )
                if len(rest) == 4 and method == "GET":
                    return self.load(warehouse, namespace, name)
                if len(rest) == 4 and method == "POST":
                    return self.commit(warehouse, namespace, name, raw)
        return self.send_json(404, error_body(404, "NotFound", "no such route"))

    def vended(self, warehouse, force=False):
        b = self.behaviour(warehouse)
        asked = "vended-credentials" in (self.headers.get("X-Iceberg-Access-Delegation") or "")
        if not b.get("vend") or not (asked or force):
            return {}, []
        now = int(time.time() * 1000)
        lifetime = b.get("lifetime_ms")
        with STATE.lock:
            STATE.vended += 1
            serial = STATE.vended
            if b.get("expired_vends"):
                b["expired_vends"] -= 1
                lifetime = -3_600_000
        if b.get("azure"):
            advertise = None if (lifetime or 0) < 0 else b.get("advertise_ms")
            return self.vended_sas(b["azure"], lifetime or 3_600_000, advertise)
        config = {
            "s3.access-key-id": "testing",
            "s3.secret-access-key": "testing",
            "s3.session-token": "vended-session-token",
            "s3.endpoint": b.get("s3_endpoint") or STATE.s3_endpoint,
            "s3.path-style-access": "true",
            "client.region": "us-east-1",
        }
        if lifetime:
            config["s3.session-token"] = f"vended.{now + lifetime}.{serial}"
            advertised = lifetime if lifetime < 0 else (b.get("advertise_ms") or lifetime)
            config["s3.session-token-expires-at-ms"] = str(now + advertised)
        if b.get("expiring") and not force:
            # Credentials about to expire, for a dead endpoint: only a refresh through
            # .../credentials reaches storage.
            config["s3.session-token-expires-at-ms"] = str(int(time.time() * 1000) + 1000)
            config["s3.endpoint"] = "http://127.0.0.1:9"
        bucket = urllib.parse.urlsplit(STATE.args.warehouse).netloc
        return config, [{"prefix": f"s3://{bucket}/", "config": config}]

    def vended_sas(self, azure, lifetime, advertise):
        """An account SAS for azurite (which checks signatures and expiry)."""
        import datetime

        from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

        account = azure["endpoint"].rstrip("/").rsplit("/", 1)[-1]
        expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(milliseconds=lifetime)
        sas = generate_account_sas(
            account,
            azure["key"],
            ResourceTypes(service=True, container=True, object=True),
            AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True, create=True),
            expiry,
        )
        host = f"{account}.dfs.core.windows.net"
        config = {
            f"adls.sas-token.{host}": sas,
            f"adls.connection-string.{host}": azure["endpoint"],
        }
        if advertise:
            config[f"adls.sas-token-expires-at-ms.{host}"] = str(int(time.time() * 1000) + advertise)
        return config, [{"prefix": f"abfss://{azure['container']}@{host}/", "config": config}]

    def load(self, warehouse, namespace, name):
        if self.behaviour(warehouse).get("hang_loads"):
            time.sleep(30)
        time.sleep(self.behaviour(warehouse).get("delay_loads_ms", 0) / 1000)
        key = (warehouse, namespace, name)
        with STATE.lock:
            blind = STATE.blind_loads.get(key, 0)
            if blind:
                STATE.blind_loads[key] = blind - 1
            truncate = STATE.failures.get(key) == "truncate-load"
            if truncate:
                del STATE.failures[key]
        if blind:
            # 500, not 503: a client sends a read's 503 again, and this load must fail.
            return self.send_json(500, error_body(500, "InternalServerError", "injected"))
        with STATE.lock:
            table = catalog_for(warehouse).load_table(namespace + (name,))
        config, creds = self.vended(warehouse)
        body = {
            "metadata-location": table.metadata_location,
            "metadata": json.loads(table.metadata.model_dump_json()),
            "config": config,
        }
        if creds:
            body["storage-credentials"] = creds
        if truncate:
            data = json.dumps(body).encode()
            data = data[: len(data) // 2]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        return self.send_json(200, body)

    def commit(self, warehouse, namespace, name, raw):
        request = CommitTableRequest.model_validate_json(raw)
        key = (warehouse, namespace, name)
        catalog = catalog_for(warehouse)
        with STATE.lock:
            mode = STATE.failures.get(key)
            if mode and mode != "400-list":
                del STATE.failures[key]
        if mode == "hang":
            time.sleep(30)
            return self.send_json(500, error_body(500, "ServiceFailureException", "hung"))
        if mode == "500":
            return self.send_json(500, error_body(500, "ServiceFailureException", "injected failure"))
        if mode == "400-list":
            body = json.loads(raw)
            if any(
                u.get("action") == "remove-snapshots" and len(u.get("snapshot-ids", [])) > 1
                for u in body.get("updates", [])
            ):
                return self.send_json(
                    400, error_body(400, "BadRequestException", "cannot parse remove-snapshots with several ids")
                )
        with STATE.lock:
            table = catalog.load_table(namespace + (name,))
            if mode == "append-first":
                rows = table.scan(snapshot_id=table.metadata.current_snapshot_id).to_arrow().slice(0, 1)
                table.append(rows)
                table = catalog.load_table(namespace + (name,))
            response = catalog.commit_table(
                table, tuple(request.requirements), tuple(request.updates)
            )
        if mode == "commit-then-500":
            return self.send_json(500, error_body(500, "ServiceFailureException", "injected after commit"))
        if mode == "commit-then-drop-blind":
            with STATE.lock:
                STATE.blind_loads[key] = 1
        if mode in ("commit-then-drop", "commit-then-drop-blind"):
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return None
        return self.send_json(
            200,
            {
                "metadata-location": response.metadata_location,
                "metadata": json.loads(response.metadata.model_dump_json()),
            },
        )


def main():
    global STATE
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--s3-endpoint", required=True)
    args = parser.parse_args()
    STATE = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"ready {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
