-- Snapshot and ref management: branch for an audit, tag a release, roll back and forward, publish.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
SET session_timezone = 'UTC';
SELECT name, type, snapshot_id FROM system.iceberg_refs ORDER BY name;
-- A branch and a tag at the current snapshot, with their own retention.
ALTER TABLE events CREATE BRANCH IF NOT EXISTS audit RETAIN 7 DAYS WITH SNAPSHOT RETENTION 3 SNAPSHOTS;
ALTER TABLE events CREATE OR REPLACE TAG release RETAIN 365 DAYS;
EXPLAIN ALTER TABLE events DROP TAG release;
-- Roll main back to the newest snapshot older than a day ago (the example test puts that time
-- here), then forward again to the audit branch.
ALTER TABLE events EXECUTE rollback_to_timestamp('2000-01-02 00:00:00');
ALTER TABLE events EXECUTE fast_forward('main', 'audit');
ALTER TABLE events EXECUTE set_current_snapshot(ref = 'release');
-- The expiry policy, validated on the way in.
ALTER TABLE events SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms' = '259200000', 'history.expire.min-snapshots-to-keep' = '5');
ALTER TABLE events UNSET TBLPROPERTIES IF EXISTS ('owner');
ALTER TABLE events DROP BRANCH IF EXISTS audit;
SELECT name, type, snapshot_id, max_ref_age_ms FROM system.iceberg_refs ORDER BY name;
