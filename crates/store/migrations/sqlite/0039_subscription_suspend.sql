-- A user's pause of a subscription (`suspended`). Feeds are shared, so pausing one's own
-- subscription must not stop the feed for others: a feed is fetched while at least one of
-- its subscriptions is not paused, and a paused subscription's user gets no new items into
-- their arrival order (user_items). Resuming brings what arrived meanwhile the way a new
-- subscription brings a shared feed's backlog: numbered above everything the user has, so
-- sync apps find it above their marks.
ALTER TABLE subscriptions ADD COLUMN suspended INTEGER NOT NULL DEFAULT 0
    CHECK (suspended IN (0, 1));

-- The due query asks whether a feed has a subscription that is not paused: the index
-- answers that without reading subscription rows.
DROP INDEX subscriptions_feed;
CREATE INDEX subscriptions_feed ON subscriptions (feed_id, suspended);

DROP TRIGGER items_arrival_insert;
DROP TRIGGER items_arrival_move;
DROP TRIGGER subscriptions_arrival_insert;
DROP TRIGGER subscriptions_arrival_move;

-- A new item: one number for all of its subscribers that are not paused.
CREATE TRIGGER items_arrival_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM subscriptions WHERE feed_id = NEW.feed_id AND suspended = 0)
BEGIN
    UPDATE sync_clock SET last_seq = last_seq + 1,
        last_us = MAX(last_us + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, c.last_seq, NEW.id, c.last_us
        FROM subscriptions s, sync_clock c WHERE s.feed_id = NEW.feed_id AND s.suspended = 0;
END;

-- An item moved to another feed (feed merges): its new feed's subscribers that are not
-- paused see it now, under a new number unless they saw it already; those who follow only
-- its old feed no longer do.
CREATE TRIGGER items_arrival_move AFTER UPDATE OF feed_id ON items
WHEN OLD.feed_id <> NEW.feed_id
BEGIN
    DELETE FROM user_items WHERE item_id = NEW.id
        AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = NEW.feed_id);
    UPDATE sync_clock SET last_seq = last_seq + 1,
        last_us = MAX(last_us + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, c.last_seq, NEW.id, c.last_us
        FROM subscriptions s, sync_clock c WHERE s.feed_id = NEW.feed_id AND s.suspended = 0;
END;

-- A new subscription that is not paused brings the feed's backlog to its user, numbered
-- above all they have.
CREATE TRIGGER subscriptions_arrival_insert AFTER INSERT ON subscriptions
WHEN NEW.suspended = 0
BEGIN
    UPDATE sync_clock SET
        last_seq = last_seq + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id),
        last_us = MAX(last_us, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
            + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id);
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT NEW.user_id, c.last_seq - b.n + b.position, b.id, c.last_us - b.n + b.position
        FROM sync_clock c,
             (SELECT i.id, ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position,
                     COUNT(*) OVER () AS n
              FROM items i WHERE i.feed_id = NEW.feed_id) b;
END;

-- A subscription pointed at another feed: the old feed's items go, the new one's backlog
-- comes (when the subscription is not paused).
CREATE TRIGGER subscriptions_arrival_move AFTER UPDATE OF feed_id ON subscriptions
WHEN OLD.feed_id <> NEW.feed_id
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.user_id
        AND item_id IN (SELECT id FROM items WHERE feed_id = OLD.feed_id);
    UPDATE sync_clock SET
        last_seq = last_seq + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id),
        last_us = MAX(last_us, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
            + (SELECT COUNT(*) FROM items WHERE feed_id = NEW.feed_id);
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT NEW.user_id, c.last_seq - b.n + b.position, b.id, c.last_us - b.n + b.position
        FROM sync_clock c,
             (SELECT i.id, ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position,
                     COUNT(*) OVER () AS n
              FROM items i WHERE i.feed_id = NEW.feed_id) b
        WHERE NEW.suspended = 0;
END;

-- A paused subscription resumed: the feed's items its user does not have yet (what arrived
-- while it was paused) come as a backlog, numbered above all they have, oldest published
-- first.
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
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT NEW.user_id, c.last_seq - b.n + b.position, b.id, c.last_us - b.n + b.position
        FROM sync_clock c,
             (SELECT i.id, ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position,
                     COUNT(*) OVER () AS n
              FROM items i WHERE i.feed_id = NEW.feed_id
                AND NOT EXISTS (SELECT 1 FROM user_items u
                                WHERE u.item_id = i.id AND u.user_id = NEW.user_id)) b;
END;
