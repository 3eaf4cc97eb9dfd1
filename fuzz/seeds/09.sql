ALTER TABLE events EXECUTE expire_snapshots(), EXECUTE remove_orphan_files();
