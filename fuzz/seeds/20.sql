CREATE TABLE t (id Int64) ENGINE = MergeTree ORDER BY id;
