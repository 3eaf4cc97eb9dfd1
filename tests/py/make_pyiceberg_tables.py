"""Build small pyiceberg tables under a warehouse folder for the Avro interop test.

Table `db.plain`: two appends and a delete (copy-on-write). Table `db.parted`: identity-partitioned, two appends. Usage: python make_pyiceberg_tables.py WAREHOUSE_DIR
"""
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

warehouse = sys.argv[1]
catalog = SqlCatalog("interop", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
catalog.create_namespace("db")
schema = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "city", StringType(), required=False),
)
arrow_schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])


def batch(ids):
    return pa.Table.from_pylist([{"id": i, "city": f"c{i % 3}"} for i in ids], schema=arrow_schema)


plain = catalog.create_table("db.plain", schema=schema)
plain.append(batch(range(0, 10)))
plain.append(batch(range(10, 20)))
plain.delete("id < 10")

spec = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city"),
)
parted = catalog.create_table("db.parted", schema=schema, partition_spec=spec)
parted.append(batch(range(0, 12)))
parted.append(batch(range(12, 20)))
print("ok")
