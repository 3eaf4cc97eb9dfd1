"""Read a manifest list and its manifests with pyiceberg's own reader; print JSON
[{"manifest_path", "added_snapshot_id", "sequence_number", "entries": [{"status", "file_path", "record_count",
"sequence_number", "column_sizes"}]}]. Usage: python pyiceberg_read.py MANIFEST_LIST_PATH
"""
import json
import sys

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import read_manifest_list

io = PyArrowFileIO()
out = []
for m in read_manifest_list(io.new_input(sys.argv[1])):
    entries = m.fetch_manifest_entry(io, discard_deleted=False)
    out.append({
        "manifest_path": m.manifest_path,
        "added_snapshot_id": m.added_snapshot_id,
        "sequence_number": m.sequence_number,
        "entries": [
            {
                "status": int(e.status),
                "file_path": e.data_file.file_path,
                "record_count": e.data_file.record_count,
                "sequence_number": e.sequence_number,
                "column_sizes": {str(k): v for k, v in (e.data_file.column_sizes or {}).items()},
            }
            for e in entries
        ],
    })
json.dump(out, sys.stdout)
