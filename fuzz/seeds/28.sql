SELECT count() FROM system.iceberg_history;
