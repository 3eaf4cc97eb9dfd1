-- Who may maintain what. Run it once as the owner, with a data folder that keeps the users, the
-- grants and the table between runs; then each user runs as itself:
--   icetrim --path ~/.icetrim < grants.sql
--   icetrim --path ~/.icetrim --user ops -q "ALTER TABLE events EXECUTE expire_snapshots(dry_run = 1)"
--   icetrim --path ~/.icetrim --user dashboards -q "SELECT count() FROM system.iceberg_snapshots WHERE table = 'events'"
-- (--user names a user; it does not authenticate one: see "Users and grants" in the README.)
CREATE TABLE IF NOT EXISTS events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
CREATE USER IF NOT EXISTS ops;
CREATE USER IF NOT EXISTS dashboards;
-- ops maintains every table of the database; it may not change properties or drop tables.
GRANT ALTER EXECUTE, OPTIMIZE ON default.* TO ops;
-- dashboards reads what the metadata tables say about events, nothing else.
GRANT SELECT ON default.events TO dashboards;
SHOW GRANTS FOR ops;
SHOW GRANTS FOR dashboards;
