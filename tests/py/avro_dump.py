"""Dump Avro object container files as JSON with fastavro: {path: {"metadata": {...}, "records": [...]}}.

Bytes become lowercase hex strings. Usage: python avro_dump.py FILE...
"""
import json
import sys

import fastavro


def plain(value):
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def dump(path):
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        metadata = {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v for k, v in reader.metadata.items()}
        records = [plain(r) for r in reader]
    return {"metadata": metadata, "records": records}


if __name__ == "__main__":
    json.dump({p: dump(p) for p in sys.argv[1:]}, sys.stdout)
