CREATE TABLE IF NOT EXISTS db.events (id Int64, name Nullable(String))
    ENGINE = IcebergS3('http://127.0.0.1:9000/bucket/events', NOSIGN)
    SETTINGS iceberg_use_version_hint = 1;
