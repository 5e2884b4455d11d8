-- Version 31 moves PostgreSQL's sync numbering to commit time, so that a subscribe and a
-- fetch of the same feed cannot deadlock on the sync clock. SQLite has one writer at a time:
-- its numbers already follow commits and nothing waits on the clock; nothing to change.
SELECT 1;
