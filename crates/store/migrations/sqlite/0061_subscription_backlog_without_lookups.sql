-- Version 61 numbers PostgreSQL's new subscription backlog without looking up the user's
-- arrival rows, whose cached plan could scan them all. SQLite plans each statement with what
-- the schema says (a correlated look-up by key takes its index at any size): nothing to change.
SELECT 1;
