-- Manifest maintenance: after many small appends a table's current snapshot lists one
-- manifest per append; rewriting them into a few partition-clustered manifests speeds up planning.
-- Data is untouched: the result is a `replace` snapshot; old manifests go with expire_snapshots.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');

-- What would be rewritten, and into how many manifests (nothing changes).
EXPLAIN ALTER TABLE events EXECUTE rewrite_manifests() FORMAT PrettyCompact;
ALTER TABLE events EXECUTE rewrite_manifests(dry_run = 1);

-- Only the manifests of partition spec 0, aiming at 4 MiB manifests.
ALTER TABLE events EXECUTE rewrite_manifests(spec_id = 0, target_manifest_size_bytes = 4194304);

-- ClickHouse's form: acts only above iceberg_manifest_min_count_to_compact manifests (100).
SET iceberg_manifest_min_count_to_compact = 30;
EXPLAIN OPTIMIZE TABLE events MANIFEST;
OPTIMIZE TABLE events MANIFEST;

-- Expiry that also drops schemas and partition specs no retained snapshot uses.
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '7d', clean_expired_metadata = 1);
