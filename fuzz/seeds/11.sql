CREATE TABLE events ENGINE = IcebergLocal('/data/warehouse/events');
