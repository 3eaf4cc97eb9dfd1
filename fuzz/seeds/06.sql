ALTER TABLE events EXECUTE remove_orphan_files(older_than = '2026-03-01 00:00:00', location = 'data/');
