SET x = 'a\'b''c'; /* c; /* n */ */ USE `d;b`; -- x;
SHOW TABLES # y;
