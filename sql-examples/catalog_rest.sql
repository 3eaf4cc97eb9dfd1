-- Tables in an Iceberg REST catalog, through ClickHouse's DataLakeCatalog database engine: the
-- catalog holds each table's current metadata pointer, and icetrim commits through it.
-- (Here a REST catalog on localhost whose warehouse `wh` lives on an S3-compatible server.)
CREATE DATABASE lake ENGINE = DataLakeCatalog('http://127.0.0.1:8181/v1')
SETTINGS catalog_type = 'rest', warehouse = 'wh', vended_credentials = 0,
         storage_endpoint = 'http://127.0.0.1:9000', aws_access_key_id = 'test-key',
         aws_secret_access_key = 'test-secret', region = 'us-east-1';
SHOW DATABASES;
SHOW CREATE DATABASE lake;
SHOW TABLES FROM lake;
SELECT name, type FROM system.iceberg_refs WHERE database = 'lake' AND table = 'ns.events' ORDER BY name;
EXPLAIN ALTER TABLE lake.`ns.events` EXECUTE expire_snapshots(retention_period = '3d');
ALTER TABLE lake.`ns.events` EXECUTE expire_snapshots(retention_period = '3d', dry_run = 1);
ALTER TABLE lake.`ns.events` EXECUTE expire_snapshots(retention_period = '3d');
USE lake;
ALTER TABLE `ns.events` EXECUTE remove_orphan_files(dry_run = 1);
USE default;
DROP DATABASE lake;
