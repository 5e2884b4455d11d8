-- Arrival order for the sync APIs (Google Reader, Fever).
--
-- Apps keep a high-water mark (Fever's since_id, Google Reader's `ot` and newest id) and ask
-- only for what lies above it. Ordering by publication date, or by global item ids, hid two
-- kinds of items below every mark: items fetched after a sync but dated before it, and the
-- backlog of a feed another user already followed when this user subscribed. So each item
-- gets, per user, the moment it became visible to that user: one row here per item a user
-- can see.
--
-- `seq` is the item's sync id for that user: unique per user and increasing in commit order.
-- A new item takes one number shared by all of its subscribers; a new subscription numbers
-- the feed's existing items anew for its user (oldest published first), above everything the
-- user already has. `arrived_us` is that moment in microseconds, rising with `seq` (by at
-- least 1 µs, so that "arrived at or before the newest I have" never takes in a later item).
-- Numbers and times come from the one-row `sync_clock`; SQLite has one writer at a time, so
-- numbers are handed out in commit order. Triggers keep the rows exact on every path that adds,
-- removes or moves items or subscriptions, so no code has to remember them.
CREATE TABLE sync_clock (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq  INTEGER NOT NULL,
    last_us   INTEGER NOT NULL
);

CREATE TABLE user_items (
    user_id     INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    item_id     INTEGER NOT NULL,
    arrived_us  INTEGER NOT NULL,
    PRIMARY KEY (user_id, seq)
) WITHOUT ROWID;
-- An item's rows (deletes, moves) and a user's row of an item (marks by item id).
CREATE UNIQUE INDEX user_items_item ON user_items (item_id, user_id);
-- `ot` / `nt`: where a time falls in a user's arrival order.
CREATE INDEX user_items_arrived ON user_items (user_id, arrived_us);

-- Items already stored keep their ids as sync ids, so apps synced before this version keep
-- theirs; their arrival is when they were fetched.
INSERT INTO user_items (user_id, seq, item_id, arrived_us)
    SELECT s.user_id, i.id, i.id, i.fetched_at * 1000000
    FROM subscriptions s JOIN items i ON i.feed_id = s.feed_id;
INSERT INTO sync_clock (id, last_seq, last_us)
    VALUES (1, COALESCE((SELECT MAX(id) FROM items), 0),
            COALESCE((SELECT MAX(fetched_at) FROM items), 0) * 1000000);

-- A new item: one number for all of its subscribers.
CREATE TRIGGER items_arrival_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM subscriptions WHERE feed_id = NEW.feed_id)
BEGIN
    UPDATE sync_clock SET last_seq = last_seq + 1,
        last_us = MAX(last_us + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, c.last_seq, NEW.id, c.last_us
        FROM subscriptions s, sync_clock c WHERE s.feed_id = NEW.feed_id;
END;

CREATE TRIGGER items_arrival_delete BEFORE DELETE ON items
BEGIN
    DELETE FROM user_items WHERE item_id = OLD.id;
END;

-- An item moved to another feed (feed merges): its new feed's subscribers see it now, under a
-- new number unless they saw it already; those who follow only its old feed no longer do.
CREATE TRIGGER items_arrival_move AFTER UPDATE OF feed_id ON items
WHEN OLD.feed_id <> NEW.feed_id
BEGIN
    DELETE FROM user_items WHERE item_id = NEW.id
        AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = NEW.feed_id);
    UPDATE sync_clock SET last_seq = last_seq + 1,
        last_us = MAX(last_us + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
    INSERT OR IGNORE INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, c.last_seq, NEW.id, c.last_us
        FROM subscriptions s, sync_clock c WHERE s.feed_id = NEW.feed_id;
END;

-- A new subscription brings the feed's backlog to its user, numbered above all they have.
CREATE TRIGGER subscriptions_arrival_insert AFTER INSERT ON subscriptions
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

CREATE TRIGGER subscriptions_arrival_delete AFTER DELETE ON subscriptions
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.user_id
        AND item_id IN (SELECT id FROM items WHERE feed_id = OLD.feed_id);
END;

-- A subscription pointed at another feed: the old feed's items go, the new one's backlog comes.
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
              FROM items i WHERE i.feed_id = NEW.feed_id) b;
END;

CREATE TRIGGER users_arrival_delete AFTER DELETE ON users
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.id;
END;
