-- Version 60 makes PostgreSQL's subscription triggers look arrival rows up by key. SQLite's
-- look-ups are by key already (a correlated subquery runs once a row, on the best index).
SELECT 1;
