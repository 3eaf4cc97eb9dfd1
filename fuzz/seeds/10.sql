ALTER TABLE events EXECUTE expire_snapshots;
