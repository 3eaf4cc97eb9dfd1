"""Runs one statement on ClickHouse (chdb) against an `IcebergLocal` table folder, for the benchmark.

usage: bench_clickhouse.py <table_dir> <sql>

Attaches the folder as table `t` (not timed), then times the statement alone and prints one JSON
line: {"seconds": <wall time of the statement>, "rows": [[name, value], ...]} or {"error": text}.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import chdb_session  # noqa: E402


def main() -> int:
    table_dir, sql = sys.argv[1], sys.argv[2]
    sess = chdb_session.open_session()
    chdb_session.run(sess, chdb_session.attach_statement(table_dir))
    reply = chdb_session.timed(sess, sql)
    print(json.dumps(reply))
    return 1 if "error" in reply else 0


if __name__ == "__main__":
    sys.exit(main())
