-- The demo session: look at a table, plan an expiry, dry-run it, run it, compact the small files,
-- then remove orphans.
-- Make a table to try it on:
--   cargo run --bin icetrim-generate -- --location /tmp/icetrim-example/events --format-version 2 --snapshots 20 --files-per-snapshot 2 --seed 1 --span 10d --branches 1 --tags 1 --staged 1 --orphans 3 --parquet
-- then: icetrim < sql-examples/demo.sql
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
SHOW TABLES;
SELECT name, type, snapshot_id, max_ref_age_ms FROM system.iceberg_refs;
SELECT snapshot_id, timestamp, operation, refs FROM system.iceberg_snapshots ORDER BY timestamp;
EXPLAIN ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5);
EXPLAIN OPTIMIZE TABLE events;
OPTIMIZE TABLE events;
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5, dry_run = 1);
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5);
EXPLAIN OPTIMIZE TABLE events;
OPTIMIZE TABLE events;
ALTER TABLE events EXECUTE remove_orphan_files();
