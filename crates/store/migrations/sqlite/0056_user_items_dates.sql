-- Each arrival row carries its item's feed and publication date (issue 38).
--
-- Whether an item is unread for a user depends on their state row, else on the item's date
-- against its subscription's watermark (`read_before`, moved by "mark all read"): the date and
-- the feed (which subscription) live in `items`, so listing a user's unread sync ids (Fever's
-- `unread_item_ids`, Google Reader's ids with `xt=read`) read one `items` row per arrival row,
-- scattered over the whole table: 1.1-1.6 s for 100,000 ids of a user with a million unread.
-- With the two numbers here the arrival rows, the user's subscriptions and state rows answer
-- alone. The triggers that write arrival rows write them too; an item moved to another feed
-- or given another date changes its rows with it.
--
-- Rows that exist now get theirs in the background, in batches of items (from next_item_id
-- up to last_item_id, `Store::backfill_arrival_dates`), so that the migration is instant on a
-- large database; until that is done the sync queries read the item rows as before.
ALTER TABLE user_items ADD COLUMN feed_id INTEGER;
ALTER TABLE user_items ADD COLUMN published_at INTEGER;

CREATE TABLE arrival_dates_backfill (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    next_item_id  INTEGER NOT NULL,
    last_item_id  INTEGER NOT NULL
);
INSERT INTO arrival_dates_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(item_id), 1), COALESCE(MAX(item_id), 0) FROM user_items;

DROP TRIGGER items_arrival_insert;
DROP TRIGGER items_arrival_move;
DROP TRIGGER subscriptions_arrival_insert;
DROP TRIGGER subscriptions_arrival_move;
DROP TRIGGER subscriptions_arrival_resume;

-- Version 39's triggers, each writing the item's feed and date with the row.
CREATE TRIGGER items_arrival_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM subscriptions WHERE feed_id = NEW.feed_id AND suspended = 0)
BEGIN
    UPDATE sync_clock SET last_seq = last_seq + 1,
        last_us = MAX(last_us + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT s.user_id, c.last_seq, NEW.id, c.last_us, NEW.feed_id, NEW.published_at
        FROM subscriptions s, sync_clock c WHERE s.feed_id = NEW.feed_id AND s.suspended = 0;
END;

-- An item moved to another feed: the rows of the users who still see it (they follow both
-- feeds) name the new feed.
CREATE TRIGGER items_arrival_move AFTER UPDATE OF feed_id ON items
WHEN OLD.feed_id <> NEW.feed_id
BEGIN
    DELETE FROM user_items WHERE item_id = NEW.id
        AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = NEW.feed_id);
    UPDATE user_items SET feed_id = NEW.feed_id, published_at = NEW.published_at
        WHERE item_id = NEW.id;
    UPDATE sync_clock SET last_seq = last_seq + 1,
        last_us = MAX(last_us + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT s.user_id, c.last_seq, NEW.id, c.last_us, NEW.feed_id, NEW.published_at
        FROM subscriptions s, sync_clock c WHERE s.feed_id = NEW.feed_id AND s.suspended = 0;
END;

-- A feed that gives an item another date (an update of it): its rows follow.
CREATE TRIGGER items_arrival_date AFTER UPDATE OF published_at ON items
WHEN OLD.published_at <> NEW.published_at
BEGIN
    UPDATE user_items SET feed_id = NEW.feed_id, published_at = NEW.published_at
        WHERE item_id = NEW.id;
END;

CREATE TRIGGER subscriptions_arrival_insert AFTER INSERT ON subscriptions
WHEN NEW.suspended = 0
BEGIN
    UPDATE sync_clock SET
        last_seq = last_seq + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id),
        last_us = MAX(last_us, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
            + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id);
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT NEW.user_id, c.last_seq - b.n + b.position, b.id, c.last_us - b.n + b.position,
               NEW.feed_id, b.published_at
        FROM sync_clock c,
             (SELECT i.id, i.published_at,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position,
                     COUNT(*) OVER () AS n
              FROM items i WHERE i.feed_id = NEW.feed_id) b;
END;

CREATE TRIGGER subscriptions_arrival_move AFTER UPDATE OF feed_id ON subscriptions
WHEN OLD.feed_id <> NEW.feed_id
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.user_id
        AND item_id IN (SELECT id FROM items WHERE feed_id = OLD.feed_id);
    UPDATE sync_clock SET
        last_seq = last_seq + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id),
        last_us = MAX(last_us, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
            + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id);
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT NEW.user_id, c.last_seq - b.n + b.position, b.id, c.last_us - b.n + b.position,
               NEW.feed_id, b.published_at
        FROM sync_clock c,
             (SELECT i.id, i.published_at,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position,
                     COUNT(*) OVER () AS n
              FROM items i WHERE i.feed_id = NEW.feed_id) b
        WHERE NEW.suspended = 0;
END;

CREATE TRIGGER subscriptions_arrival_resume AFTER UPDATE OF suspended ON subscriptions
WHEN OLD.suspended = 1 AND NEW.suspended = 0
BEGIN
    UPDATE sync_clock SET
        last_seq = last_seq + (SELECT COUNT(*) FROM items i WHERE i.feed_id = NEW.feed_id
            AND NOT EXISTS (SELECT 1 FROM user_items u
                            WHERE u.item_id = i.id AND u.user_id = NEW.user_id)),
        last_us = MAX(last_us, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
            + (SELECT COUNT(*) FROM items i WHERE i.feed_id = NEW.feed_id
                AND NOT EXISTS (SELECT 1 FROM user_items u
                                WHERE u.item_id = i.id AND u.user_id = NEW.user_id));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT NEW.user_id, c.last_seq - b.n + b.position, b.id, c.last_us - b.n + b.position,
               NEW.feed_id, b.published_at
        FROM sync_clock c,
             (SELECT i.id, i.published_at,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position,
                     COUNT(*) OVER () AS n
              FROM items i WHERE i.feed_id = NEW.feed_id
                AND NOT EXISTS (SELECT 1 FROM user_items u
                                WHERE u.item_id = i.id AND u.user_id = NEW.user_id)) b;
END;
