ALTER TABLE events EXECUTE expire_snapshots(snapshot_ids = [101, 102, 103], dry_run = 1);
