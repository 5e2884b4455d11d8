-- The language of each item and feed (issue 37): a BCP 47 tag (`en`, `ja`, `zh-TW`) or NULL
-- when nothing tells. Items are given theirs as they are stored; items stored before this
-- migration are given theirs by a background job in batches (`Store::backfill_languages`),
-- from next_item_id up to last_item_id, so that the migration itself is instant.
ALTER TABLE items ADD COLUMN language TEXT;
ALTER TABLE feeds ADD COLUMN language TEXT;
CREATE TABLE language_backfill (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    next_item_id  INTEGER NOT NULL,
    last_item_id  INTEGER NOT NULL
);
INSERT INTO language_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(id), 1), COALESCE(MAX(id), 0) FROM items;
