-- Version 58 makes PostgreSQL's triggers on a fetch's writes look rows up by key, shortens
-- what it does while it holds the sync clock at commit, and puts the feed in its due index.
-- SQLite numbers arrivals as rows are inserted, under its one writer; its triggers' plans are
-- not kept from old statistics; its due index holds the feed already (the row id): nothing
-- to change.
SELECT 1;
