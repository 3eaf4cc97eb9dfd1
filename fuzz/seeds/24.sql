SET allow_experimental_expire_snapshots = 1, iceberg_orphan_files_older_than_seconds = 86400;
