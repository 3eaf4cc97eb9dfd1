-- Daily maintenance of one table: keep a week of history (at least 10 snapshots), then clear
-- files nothing references that are older than three days.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '7d', retain_last = 10);
ALTER TABLE events EXECUTE remove_orphan_files();
