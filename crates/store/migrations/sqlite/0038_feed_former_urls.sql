-- The addresses a feed had before a permanent redirect moved it (F14), so that what still
-- names a feed by its old address (another reader's history being imported) finds it. A
-- feed merged into another brings its former addresses along; deleting a feed deletes them.
CREATE TABLE feed_former_urls (
    url       TEXT    PRIMARY KEY,
    feed_id   INTEGER  NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    moved_at  INTEGER  NOT NULL
);
CREATE INDEX feed_former_urls_feed ON feed_former_urls (feed_id);
