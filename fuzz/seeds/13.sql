CREATE TABLE logs ENGINE = IcebergS3('s3://bucket/logs/', 'AKIA...', 'secret')
    SETTINGS iceberg_metadata_file_path = 'metadata/v7.metadata.json';
