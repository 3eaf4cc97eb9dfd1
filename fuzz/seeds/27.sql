SELECT * FROM system.iceberg_refs WHERE database != 'system' ORDER BY name;
