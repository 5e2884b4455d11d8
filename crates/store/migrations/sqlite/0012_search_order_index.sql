-- Search by date (F35): a search that matches up to tens of thousands of items sorts them by
-- date and checks the user's scope, for which it needs each match's date and feed. Looked up
-- by id in `items`, each match reads its whole row (title and content); this index holds just
-- those columns, so the lookups stay in a few megabytes of index pages.
CREATE INDEX items_id_date_feed ON items (id, published_at, feed_id);
