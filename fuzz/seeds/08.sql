EXPLAIN ALTER TABLE events EXECUTE expire_snapshots(retention_period = '1d12h30m');
