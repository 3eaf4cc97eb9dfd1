#!/usr/bin/env python3
"""pyiceberg's metadata tables of one table, normalised for comparison with icetrim's
`system.iceberg_*` tables. JSON on stdout: {"files", "entries", "all_files", "manifests",
"all_manifests", "partitions", "metadata_log_entries", "properties"}, each a list of rows.

Normalisation (the same icetrim's side applies to its Arrow rows):
- timestamps are milliseconds since the epoch; binary values lower-case hex;
- maps are lists of [key, value] pairs sorted by key (a partition keeps its spec's field order;
  `readable_metrics` the schema's column order);
- partition values and readable bounds are text per Iceberg type: dates `YYYY-MM-DD`,
  timestamps `YYYY-MM-DD HH:MM:SS.ffffff` (`+00:00` for timestamptz), floats as Python repr,
  booleans `true`/`false`, decimals `str(Decimal)`, uuids hyphenated;
- manifest partition summary bounds are pyiceberg's own human strings.

Usage: python inspect_tables.py METADATA_PATH
"""
import datetime
import decimal
import json
import sys
import uuid


def text(value, iceberg_type=None):
    from pyiceberg.types import DateType, TimestampType, TimestamptzType, TimeType

    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(iceberg_type, DateType) and isinstance(value, int):
        value = datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
    if isinstance(iceberg_type, (TimestampType, TimestamptzType)) and isinstance(value, int):
        value = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
        if isinstance(iceberg_type, TimestamptzType):
            value = value.replace(tzinfo=datetime.timezone.utc)
    if isinstance(iceberg_type, TimeType) and isinstance(value, int):
        value = (datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)).time()
    if isinstance(value, datetime.datetime):
        tz = "+00:00" if value.tzinfo is not None else ""
        return value.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f") + tz
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time):
        return value.strftime("%H:%M:%S.%f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (uuid.UUID, decimal.Decimal)):
        return str(value)
    return str(value)


def ms(value):
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return int(value.timestamp() * 1000)
    return value


def pairs(m, value=lambda v: v):
    if m is None:
        return None
    return sorted([k, value(v)] for k, v in (m.items() if isinstance(m, dict) else m))


def hexed(v):
    return None if v is None else bytes(v).hex()


def main(metadata_path):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_path)
    meta = table.metadata
    schema = meta.schema()
    column_types = {f.name: f.field_type for f in schema.fields}
    spec_types = {}
    for spec in meta.partition_specs:
        spec_types[spec.spec_id] = {
            f.name: f.field_type for f in spec.partition_type(schema).fields
        }
    all_result_types = {}
    for types in spec_types.values():
        all_result_types.update(types)

    def partition(p):
        # pyiceberg lists the table's every partition field; icetrim those of the file's spec.
        if p is None:
            return []
        return [[k, text(v, all_result_types.get(k))] for k, v in p.items()]

    def readable(rm):
        out = []
        for name, m in (rm or {}).items():
            t = column_types.get(name)
            out.append([name, {
                "column_size": m["column_size"],
                "value_count": m["value_count"],
                "null_value_count": m["null_value_count"],
                "nan_value_count": m["nan_value_count"],
                "lower_bound": text(m["lower_bound"], t),
                "upper_bound": text(m["upper_bound"], t),
            }])
        return out

    def data_file(r, with_spec):
        out = {
            "content": r["content"],
            "file_path": r["file_path"],
            "file_format": r["file_format"],
        }
        if with_spec:
            out["spec_id"] = r["spec_id"]
        out.update({
            "partition": partition(r["partition"]),
            "record_count": r["record_count"],
            "file_size_in_bytes": r["file_size_in_bytes"],
            "column_sizes": pairs(r["column_sizes"]),
            "value_counts": pairs(r["value_counts"]),
            "null_value_counts": pairs(r["null_value_counts"]),
            "nan_value_counts": pairs(r["nan_value_counts"]),
            "lower_bounds": pairs(r["lower_bounds"], hexed),
            "upper_bounds": pairs(r["upper_bounds"], hexed),
            "key_metadata": hexed(r["key_metadata"]),
            "split_offsets": r["split_offsets"],
            "equality_ids": r["equality_ids"],
            "sort_order_id": r["sort_order_id"],
        })
        return out

    def files_rows(t):
        rows = []
        for r in t.to_pylist():
            row = data_file(r, True)
            row["readable_metrics"] = readable(r["readable_metrics"])
            rows.append(row)
        return rows

    out = {"files": [], "entries": [], "manifests": [], "partitions": []}
    if meta.current_snapshot_id is not None:
        out["files"] = files_rows(table.inspect.files())
        for r in table.inspect.entries().to_pylist():
            out["entries"].append({
                "status": r["status"],
                "snapshot_id": r["snapshot_id"],
                "sequence_number": r["sequence_number"],
                "file_sequence_number": r["file_sequence_number"],
                "data_file": data_file(r["data_file"], False),
                "readable_metrics": readable(r["readable_metrics"]),
            })
        for r in table.inspect.partitions().to_pylist():
            r["partition"] = partition(r.get("partition"))
            r["last_updated_at"] = ms(r["last_updated_at"])
            out["partitions"].append(r)
    out["all_files"] = files_rows(table.inspect.all_files())

    def manifest_rows(t):
        rows = []
        for r in t.to_pylist():
            if "key_metadata" in r:
                r["key_metadata"] = hexed(r["key_metadata"])
            rows.append(r)
        return rows

    out["manifests"] = manifest_rows(table.inspect.manifests())
    out["all_manifests"] = manifest_rows(table.inspect.all_manifests())
    out["metadata_log_entries"] = [
        dict(r, timestamp=ms(r["timestamp"])) for r in table.inspect.metadata_log_entries().to_pylist()
    ]
    out["properties"] = sorted([k, v] for k, v in meta.properties.items())
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
