ALTER TABLE events EXECUTE remove_orphan_files('1717200000', dry_run = 1) FORMAT JSONEachRow;
