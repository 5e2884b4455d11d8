-- Version 62 keeps PostgreSQL's subscription departure trigger on its keys whatever the table
-- held when its cached plan was made. SQLite plans each statement with what the schema says
-- (a correlated look-up by key takes its index at any size): nothing to change.
SELECT 1;
