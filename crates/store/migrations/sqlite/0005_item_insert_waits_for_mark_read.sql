-- Version 5 makes PostgreSQL's item trigger wait for a mark-read in flight on the same feed.
-- SQLite has one writer, so an item insert and a mark-read never overlap: nothing to change.
SELECT 1;
