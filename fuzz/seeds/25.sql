SELECT * FROM system.iceberg_history;
