-- Compaction: look at the plan, rewrite the small files into a new `replace` snapshot (history
-- untouched), then let expire_snapshots remove the replaced files.
-- (The example table is made by `icetrim-generate --parquet`: real Parquet data files.)
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
SET session_timezone = 'UTC';
EXPLAIN OPTIMIZE TABLE events;
OPTIMIZE TABLE events;
SELECT snapshot_id, operation FROM system.iceberg_snapshots ORDER BY timestamp DESC LIMIT 1;
ALTER TABLE events EXECUTE expire_snapshots(retain_last = 1, retention_period = '0s');
