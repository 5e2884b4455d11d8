-- Fewer index entries per label row (issue 33): what a rule's label outcome writes when an
-- item arrives, hundreds of rows a fetch. item_labels is keyed by (item_id, user_id, label),
-- which also finds an item's labels when the item is deleted (the cascade), so
-- item_labels_item goes: a row is the heap tuple and two index entries instead of three (a
-- user's labels are found by item_labels_by_label, which starts with user_id). SQLite's
-- version also rebuilds item_states without its rowid; a PostgreSQL table is a heap with
-- its indexes either way.
ALTER TABLE item_labels DROP CONSTRAINT item_labels_pkey;
ALTER TABLE item_labels ADD CONSTRAINT item_labels_pkey PRIMARY KEY (item_id, user_id, label);
DROP INDEX item_labels_item;
