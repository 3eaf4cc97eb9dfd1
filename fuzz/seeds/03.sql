ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 10);
