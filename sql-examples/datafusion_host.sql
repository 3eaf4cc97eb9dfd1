-- The script examples/datafusion_host.rs runs inside an Apache DataFusion host (not for the
-- icetrim shell: `owners` is the host's own table, read from a Parquet file, and the last query is
-- DataFusion SQL). icetrim::host::sql sends icetrim's statements to icetrim and the rest to
-- DataFusion; icetrim's metadata tables are the catalog `icetrim` there.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
-- DataFusion: the host's data.
SELECT team, count(*) AS tables FROM owners GROUP BY team ORDER BY team;
-- icetrim: what an expiry would remove.
ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5, dry_run = 1);
-- DataFusion: icetrim's metadata joined with the host's data.
SELECT o.team, s."table", count(*) AS snapshots
FROM icetrim.system.iceberg_snapshots s JOIN owners o ON s."table" = o.table_name
GROUP BY o.team, s."table" ORDER BY o.team;
