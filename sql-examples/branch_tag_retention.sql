-- Branches and tags carry their own retention: see it, then let expiry apply it.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
SELECT name, type, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms FROM system.iceberg_refs ORDER BY name;
ALTER TABLE events EXECUTE expire_snapshots(retain_last = 3);
SELECT name, type FROM system.iceberg_refs ORDER BY name;
