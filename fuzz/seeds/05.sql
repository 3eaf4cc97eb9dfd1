ALTER TABLE events EXECUTE expire_snapshots(expire_before => '2024-06-01T00:00:00Z', dry_run => true);
