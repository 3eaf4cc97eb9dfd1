-- Table health before maintenance: files, sizes, delete files, manifests, refs and policy, in SQL
-- over the system.iceberg_* metadata tables.
CREATE TABLE events ENGINE = IcebergLocal('/tmp/icetrim-example/events');
SET session_timezone = 'UTC';
SHOW TABLES FROM system;
DESCRIBE TABLE events;
-- Data files of the current snapshot: how many, how small, how many rows, per partition.
SELECT partition, count() AS files, formatReadableSize(sum(file_size_in_bytes)) AS size,
       quantile(0.5)(file_size_in_bytes) AS median_bytes, sum(record_count) AS rows
FROM system.iceberg_files WHERE table = 'events' AND content = 0
GROUP BY partition ORDER BY files DESC, partition LIMIT 10;
-- Delete files waiting for compaction, and the manifests the current snapshot reads.
SELECT countIf(content = 1) AS position_deletes, countIf(content = 2) AS equality_deletes
FROM system.iceberg_files WHERE table = 'events';
SELECT partition_spec_id, count() AS manifests, formatReadableSize(sum(length)) AS size
FROM system.iceberg_manifests WHERE table = 'events' GROUP BY partition_spec_id;
-- Every ref with its snapshot's time and its own retention.
SELECT r.name, r.type, s.timestamp, r.min_snapshots_to_keep, r.max_snapshot_age_ms, r.max_ref_age_ms
FROM system.iceberg_refs AS r JOIN system.iceberg_snapshots AS s
  ON r.snapshot_id = s.snapshot_id AND r.table = s.table
WHERE r.table = 'events' ORDER BY s.timestamp, r.name;
-- History per day, and the files every snapshot still holds (what expiry could free).
SELECT toDate(timestamp) AS day, count() AS snapshots, uniqExact(operation) AS operations
FROM system.iceberg_snapshots WHERE table = 'events' GROUP BY day ORDER BY day;
SELECT count() AS files_ever, formatReadableQuantity(sum(record_count)) AS rows_ever
FROM system.iceberg_all_files WHERE table = 'events';
SELECT key, value FROM system.iceberg_properties WHERE table = 'events' ORDER BY key;
SHOW SETTINGS LIKE 'iceberg_expire_default%';
