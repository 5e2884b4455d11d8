-- Version 46 counts PostgreSQL's new state rows once per INSERT statement instead of once per
-- row. SQLite has no statement triggers with transition tables, and its row trigger costs no
-- function call or round trip: nothing to change.
SELECT 1;
