CREATE TABLE t ENGINE = IcebergLocal(concat('/a', '/b'));
