-- A table on S3 (here an S3-compatible server on localhost; keys as the server expects).
CREATE TABLE events ENGINE = IcebergS3('http://127.0.0.1:9000/icetrim-example/events/', 'test-key', 'test-secret');
SHOW CREATE TABLE events;
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', dry_run = 1);
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d');
ALTER TABLE events EXECUTE remove_orphan_files(dry_run = 1);
