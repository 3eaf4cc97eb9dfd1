USE db;
