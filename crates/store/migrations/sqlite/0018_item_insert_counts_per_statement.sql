-- Version 18 counts PostgreSQL's new items once per INSERT statement instead of once per row.
-- SQLite has no statement triggers with transition tables, and its row trigger costs no
-- round trip or lock: nothing to change.
SELECT 1;
