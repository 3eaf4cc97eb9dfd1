-- Iceberg tables catalogued in AWS Glue (icetrim built with the cargo feature `glue`).
-- Here a Glue-compatible server and S3 on localhost (moto); on AWS, drop the URL argument
-- (AWS's regional Glue endpoint is used) and storage_endpoint.
CREATE DATABASE glue ENGINE = DataLakeCatalog('http://127.0.0.1:5000')
    SETTINGS catalog_type = 'glue', region = 'us-east-1',
             aws_access_key_id = 'test-key', aws_secret_access_key = 'test-secret',
             storage_endpoint = 'http://127.0.0.1:5000';
SHOW TABLES FROM glue;
SHOW CREATE DATABASE glue;
SELECT name, type, snapshot_id FROM system.iceberg_refs WHERE database = 'glue' AND table = 'sales.events' ORDER BY name;
EXPLAIN ALTER TABLE glue.`sales.events` EXECUTE expire_snapshots(retention_period = '5d');
ALTER TABLE glue.`sales.events` EXECUTE expire_snapshots(retention_period = '5d', dry_run = 1);
ALTER TABLE glue.`sales.events` EXECUTE expire_snapshots(retention_period = '5d');
ALTER TABLE glue.`sales.events` EXECUTE remove_orphan_files(dry_run = 1);
