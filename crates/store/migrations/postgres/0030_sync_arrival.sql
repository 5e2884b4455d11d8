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
-- Numbers and times come from the one-row `sync_clock`. A sequence would not do: its numbers
-- are handed out at insert, not at commit, so a transaction that commits later with a lower
-- number would land under a mark an app already holds. Updating the clock's row instead
-- holds its lock to the end of the transaction, so numbers follow commit order. Triggers keep
-- the rows exact on every path that adds, removes or moves items or subscriptions, so no code
-- has to remember them. (No foreign keys: each would check and lock the item's row once per
-- subscriber on every insert; the triggers delete what they would have cascaded.)
CREATE TABLE sync_clock (
    id        BIGINT PRIMARY KEY CHECK (id = 1),
    last_seq  BIGINT NOT NULL,
    last_us   BIGINT NOT NULL
);

CREATE TABLE user_items (
    user_id     BIGINT NOT NULL,
    seq         BIGINT NOT NULL,
    item_id     BIGINT NOT NULL,
    arrived_us  BIGINT NOT NULL,
    PRIMARY KEY (user_id, seq)
);
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

-- Takes `count` numbers and as many microseconds from the clock (its row stays locked until
-- commit) and returns what comes before them: row k of the batch (from 1) is number base + k,
-- arrived at at_us + k.
CREATE FUNCTION tidings_sync_clock_take(count BIGINT, OUT base BIGINT, OUT at_us BIGINT)
LANGUAGE sql AS $$
    UPDATE sync_clock SET last_seq = last_seq + count,
        last_us = GREATEST(last_us, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT)
                  + count
    RETURNING last_seq - count, last_us - count;
$$;

-- New items, once per statement: one number per item for all of its subscribers, oldest
-- published first (items of one fetch arrive together; the newest among them comes last).
CREATE FUNCTION tidings_items_arrived() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wanted BIGINT;
    base BIGINT;
    at_us BIGINT;
BEGIN
    SELECT COUNT(*) INTO wanted FROM new_items n
    WHERE EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = n.feed_id);
    IF wanted = 0 THEN
        RETURN NULL;
    END IF;
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(wanted) t;
    INSERT INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, base + n.position, n.id, at_us + n.position
        FROM (SELECT n.id, n.feed_id,
                     ROW_NUMBER() OVER (ORDER BY n.published_at, n.id) AS position
              FROM new_items n
              WHERE EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = n.feed_id)) n
        JOIN subscriptions s ON s.feed_id = n.feed_id
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
-- Named to fire after items_count_insert (statement triggers fire in name order), which
-- locks the feed's subscription rows first: every writer takes those before the clock.
CREATE TRIGGER items_sync_arrival AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION tidings_items_arrived();

CREATE FUNCTION tidings_items_departed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE item_id IN (SELECT id FROM old_items);
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_sync_departure AFTER DELETE ON items
    REFERENCING OLD TABLE AS old_items
    FOR EACH STATEMENT EXECUTE FUNCTION tidings_items_departed();

-- An item moved to another feed (feed merges): its new feed's subscribers see it now, under a
-- new number unless they saw it already; those who follow only its old feed no longer do.
CREATE FUNCTION tidings_item_arrival_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base BIGINT;
    at_us BIGINT;
BEGIN
    DELETE FROM user_items WHERE item_id = NEW.id
        AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = NEW.feed_id);
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(1) t;
    INSERT INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, base + 1, NEW.id, at_us + 1 FROM subscriptions s
        WHERE s.feed_id = NEW.feed_id
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_sync_move AFTER UPDATE OF feed_id ON items
    FOR EACH ROW WHEN (OLD.feed_id <> NEW.feed_id)
    EXECUTE FUNCTION tidings_item_arrival_moved();

-- A subscription's items: on insert the feed's backlog, numbered above all its user has; on
-- delete they go; on a move to another feed, both.
CREATE FUNCTION tidings_subscription_arrival() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    backlog BIGINT;
    base BIGINT;
    at_us BIGINT;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM user_items WHERE user_id = OLD.user_id
            AND item_id IN (SELECT id FROM items WHERE feed_id = OLD.feed_id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT COUNT(*) INTO backlog FROM items WHERE feed_id = NEW.feed_id;
        IF backlog > 0 THEN
            SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(backlog) t;
            INSERT INTO user_items (user_id, seq, item_id, arrived_us)
                SELECT NEW.user_id, base + b.position, b.id, at_us + b.position
                FROM (SELECT i.id, ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
                      FROM items i WHERE i.feed_id = NEW.feed_id) b
                ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER subscriptions_sync_arrival AFTER INSERT OR DELETE ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION tidings_subscription_arrival();
CREATE TRIGGER subscriptions_sync_move AFTER UPDATE OF feed_id ON subscriptions
    FOR EACH ROW WHEN (OLD.feed_id <> NEW.feed_id)
    EXECUTE FUNCTION tidings_subscription_arrival();

CREATE FUNCTION tidings_user_departed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER users_sync_departure AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION tidings_user_departed();
