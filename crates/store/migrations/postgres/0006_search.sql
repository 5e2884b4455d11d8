-- Full-text search (F35). tidings tokenizes in Rust (crates/text: words, CJK bigrams, folded
-- case, width and diacritics) and stores each item's tokens as a tsvector built from those
-- tokens and their positions directly (no text search parser or dictionary is involved), the
-- same tokens SQLite's FTS5 index holds. Queries are tsquery values built the same way.
CREATE TABLE item_search (
    item_id   BIGINT   PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    document  TSVECTOR NOT NULL
);
CREATE INDEX item_search_document ON item_search USING GIN (document);

-- Items that existed before this migration are indexed by a background job in batches
-- (`Store::backfill_search_index`), so that the migration itself is instant: it indexes ids
-- from next_item_id up to last_item_id and records its progress here. New and changed items
-- are indexed as they are stored.
CREATE TABLE search_backfill (
    id            BIGINT PRIMARY KEY CHECK (id = 1),
    next_item_id  BIGINT NOT NULL,
    last_item_id  BIGINT NOT NULL
);
INSERT INTO search_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(id), 1), COALESCE(MAX(id), 0) FROM items;
