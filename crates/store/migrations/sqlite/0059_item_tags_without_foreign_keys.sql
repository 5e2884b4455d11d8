-- Version 59 drops PostgreSQL's foreign keys of tag rows, each a query of its own there.
-- SQLite keeps them: each is a B-tree lookup.
SELECT 1;
