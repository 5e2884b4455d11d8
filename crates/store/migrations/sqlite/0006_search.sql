-- Full-text search (F35). tidings tokenizes in Rust (crates/text: words, CJK bigrams, folded
-- case, width and diacritics) and stores each item's tokens joined by spaces; FTS5's `ascii`
-- tokenizer splits only at ASCII separators, so it indexes exactly those tokens, as
-- PostgreSQL's tsvector does. Contentless: the text stays in `items`, the index holds tokens
-- only, and `contentless_delete` lets a deleted or changed item's row go. rowid = items.id.
CREATE VIRTUAL TABLE item_search USING fts5(
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'ascii'
);

-- Items deleted by any path (retention, a feed's removal cascading) leave the index too.
CREATE TRIGGER items_search_delete AFTER DELETE ON items BEGIN
    DELETE FROM item_search WHERE rowid = old.id;
END;

-- Items that existed before this migration are indexed by a background job in batches
-- (`Store::backfill_search_index`), so that the migration itself is instant: it indexes ids
-- from next_item_id up to last_item_id and records its progress here. New and changed items
-- are indexed as they are stored.
CREATE TABLE search_backfill (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    next_item_id  INTEGER NOT NULL,
    last_item_id  INTEGER NOT NULL
);
INSERT INTO search_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(id), 1), COALESCE(MAX(id), 0) FROM items;
