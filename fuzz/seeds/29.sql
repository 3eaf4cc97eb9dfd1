SELECT * FROM system.iceberg_history WHERE a = 1 OR b = 2;
