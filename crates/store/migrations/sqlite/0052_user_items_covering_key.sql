-- PostgreSQL's arrival rows get a key that holds their arrival time and item, so that a page
-- of ids is read from the index alone. SQLite's `user_items` is already a `WITHOUT ROWID`
-- table: its rows live in the key's own B-tree, in (user, seq) order, so there is nothing to do.
SELECT 1;
