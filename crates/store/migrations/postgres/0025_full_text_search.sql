-- Version 25: an item's full article (F6) is searched with it. New and changed articles are
-- indexed as they are saved; those saved before this version are indexed by the search
-- backfill (`Store::backfill_search_index`, after the items of migration 6), which walks
-- item_full_texts from next_item_id up to last_item_id and records its progress here, so
-- that the migration itself is instant.
CREATE TABLE search_full_text_backfill (
    id            BIGINT PRIMARY KEY CHECK (id = 1),
    next_item_id  BIGINT NOT NULL,
    last_item_id  BIGINT NOT NULL
);
INSERT INTO search_full_text_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(item_id), 1), COALESCE(MAX(item_id), 0)
FROM item_full_texts WHERE content IS NOT NULL;
