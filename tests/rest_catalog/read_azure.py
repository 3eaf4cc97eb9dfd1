#!/usr/bin/env python3
"""Read a table on azurite through the test REST catalog with pyiceberg's RestCatalog client (the
account key, through azurite_io.AzuriteFileIO): every ref's rows.

Usage: read_azure.py URI WAREHOUSE NAMESPACE TABLE AZURE_JSON ({"endpoint", "key"})
Prints {"refs": {ref: [rows, digest]}} or {"error": "..."}.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from read import arrow_rows, digest  # noqa: E402


def main(argv):
    uri, warehouse, namespace, table, azure = argv[1:6]
    azure = json.loads(azure)
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog(
        "rest",
        **{
            "type": "rest",
            "uri": uri,
            "warehouse": warehouse,
            "py-io-impl": "azurite_io.AzuriteFileIO",
            "adls.account-key": azure["key"],
            "azurite.endpoint": azure["endpoint"],
        },
    )
    t = catalog.load_table((*namespace.split("."), table))
    refs = {}
    for name, ref in t.metadata.refs.items():
        rows = arrow_rows(t.scan(snapshot_id=ref.snapshot_id).to_arrow())
        refs[name] = [len(rows), digest(rows)]
    print(json.dumps({"refs": refs}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # noqa: BLE001
        import traceback

        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.exit(0)
