ALTER TABLE db.events EXECUTE expire_snapshots('2024-06-01 00:00:00');
