CREATE TABLE blobs ENGINE = IcebergAzure('http://127.0.0.1:10000/devstoreaccount1', 'container', 'tables/blobs',
    'devstoreaccount1', 'key');
