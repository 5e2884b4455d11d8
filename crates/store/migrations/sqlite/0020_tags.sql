-- Version 20: tags with scores (F41). Each item's keyphrases, found by tidings-tags from its
-- title and text, with a score in 0–1 (how well the phrase describes the item). Tag names are
-- normalized (NFKC, case-folded, at most 50 characters) before they get here.
CREATE TABLE tags (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE CHECK (name <> '')
);

-- An item's tags. Deleting an item (retention, a feed's removal) drops its rows.
CREATE TABLE item_tags (
    item_id  INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    tag_id   INTEGER NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
    score    REAL NOT NULL CHECK (score >= 0 AND score <= 1),
    PRIMARY KEY (item_id, tag_id)
);
-- A tag's items (the tag page) and the counts of tags.
CREATE INDEX item_tags_tag ON item_tags (tag_id, item_id);

-- Items to tag: the store queues an item in the transaction that inserts it or changes its
-- text, and the worker's tagging job claims them with a lease, like the full-text queue.
-- `version` grows when a queued item changes again, so that tags found from the older text do
-- not take the newer text's place in the queue.
CREATE TABLE tag_jobs (
    item_id      INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL DEFAULT 0,
    queued_at    INTEGER NOT NULL,
    lease_owner  TEXT,
    lease_until  INTEGER
);

-- Items stored before this migration are queued by the tagging job a batch at a time
-- (`Store::claim_tag_jobs`), from next_item_id up to last_item_id, so that the migration
-- itself is instant on a large database.
CREATE TABLE tag_backfill (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    next_item_id  INTEGER NOT NULL,
    last_item_id  INTEGER NOT NULL
);
INSERT INTO tag_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(id), 1), COALESCE(MAX(id), 0) FROM items;
