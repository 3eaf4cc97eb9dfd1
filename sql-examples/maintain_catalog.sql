-- Keep every table of a database lean by a policy set once: SYSTEM MAINTAIN decides per table
-- what is due (compaction, manifest rewrite, expiry, orphan removal) and runs it in a safe order.
-- A DataLakeCatalog database works the same: SYSTEM MAINTAIN DATABASE lake NAMESPACE 'sales'.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
-- The policy lives in the table's own properties: a week of history, orphan removal on.
ALTER TABLE events SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms' = '604800000', 'icetrim.maintain.orphans.enabled' = 'true');
-- What is due and why, with every knob and where its value comes from; nothing changes.
EXPLAIN SYSTEM MAINTAIN DATABASE default;
-- The same decisions as a dry run, then the run itself: one row per table and procedure.
SYSTEM MAINTAIN DATABASE default SETTINGS dry_run = 1;
SYSTEM MAINTAIN DATABASE default;
