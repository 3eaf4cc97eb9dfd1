-- Look before you leap: the plan, the counts a real run would give, then the real run.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
SET session_timezone = 'UTC';
EXPLAIN ALTER TABLE events EXECUTE expire_snapshots(retention_period = '1d');
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '1d', dry_run = 1);
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '1d');
SELECT snapshot_id, timestamp, operation FROM system.iceberg_snapshots ORDER BY timestamp;
