-- Version 55 drops PostgreSQL's foreign keys of item_labels, each a query and a row lock per
-- label row (issue 33). SQLite checks a foreign key by one lookup in the parent's B-tree: with
-- the table rebuilt without them (this version as first written, triggers deleting the rows
-- instead), the rules-ingest bench read the same (+14.7 % against +14.3 %, paired runs), so the
-- table keeps them here, and their cascades: nothing to change.
SELECT 1;
