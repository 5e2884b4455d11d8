-- Version 30's numbers are given at commit (issue 29).
--
-- Version 30 took the sync clock's row lock when items or subscriptions were inserted and held
-- it to the end of the transaction. A subscribe locks its feed's row before it inserts the
-- subscription, and a fetch updates its feed's row after it inserts items: a subscribe to a
-- feed while a fetch of it was writing could close a deadlock, and PostgreSQL aborted one of
-- them. Now the clock is taken at commit, by deferred triggers, and by nothing else, so a
-- transaction that holds it waits for no other lock.
DROP TRIGGER items_sync_arrival ON items;
DROP TRIGGER items_sync_departure ON items;
DROP TRIGGER items_sync_move ON items;
DROP TRIGGER subscriptions_sync_arrival ON subscriptions;
DROP TRIGGER subscriptions_sync_move ON subscriptions;
DROP TRIGGER users_sync_departure ON users;
DROP FUNCTION tidings_items_arrived();
DROP FUNCTION tidings_items_departed();
DROP FUNCTION tidings_item_arrival_moved();
DROP FUNCTION tidings_subscription_arrival();
DROP FUNCTION tidings_user_departed();
DROP FUNCTION tidings_sync_clock_take(BIGINT);

-- Takes `count` numbers and as many microseconds from the clock (its row stays locked until
-- commit) and returns what comes before them: row k of the batch (from 1) is number base + k,
-- arrived at at_us + k. Called only from the commit-time triggers below.
CREATE FUNCTION tidings_sync_clock_take(count BIGINT, OUT base BIGINT, OUT at_us BIGINT)
LANGUAGE sql AS $$
    UPDATE sync_clock SET last_seq = last_seq + count,
        last_us = GREATEST(last_us, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT)
                  + count
    RETURNING last_seq - count, last_us - count;
$$;

-- Items that reached their feed in the open transaction (inserted, or moved by a feed merge)
-- and wait for its commit to be numbered. Rows never outlive their transaction.
CREATE UNLOGGED TABLE sync_pending (item_id BIGINT NOT NULL);
CREATE INDEX sync_pending_item ON sync_pending (item_id);

CREATE FUNCTION tidings_items_arrived() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sync_pending (item_id) SELECT id FROM new_items;
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_sync_arrival AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION tidings_items_arrived();

-- At commit, the first pending row's trigger numbers all of the transaction's pending items
-- at once, oldest published first (the items of one fetch arrive together; the newest among
-- them comes last), for every subscriber of the feed each is in now; the later rows' triggers
-- find nothing left. Users who already have an item keep its number.
CREATE FUNCTION tidings_sync_pending_settle() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending BIGINT[];
    wanted BIGINT;
    base BIGINT;
    at_us BIGINT;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sync_pending WHERE item_id = NEW.item_id) THEN
        RETURN NULL;
    END IF;
    WITH taken AS (DELETE FROM sync_pending RETURNING item_id)
    SELECT array_agg(DISTINCT item_id) INTO pending FROM taken;
    SELECT COUNT(*) INTO wanted FROM items i
    WHERE i.id = ANY (pending)
      AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = i.feed_id);
    IF wanted = 0 THEN
        RETURN NULL;
    END IF;
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(wanted) t;
    INSERT INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, base + n.position, n.id, at_us + n.position
        FROM (SELECT i.id, i.feed_id,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
              FROM items i
              WHERE i.id = ANY (pending)
                AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = i.feed_id)) n
        JOIN subscriptions s ON s.feed_id = n.feed_id
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER sync_pending_settle AFTER INSERT ON sync_pending
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tidings_sync_pending_settle();

CREATE FUNCTION tidings_items_departed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE item_id IN (SELECT id FROM old_items);
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_sync_departure AFTER DELETE ON items
    REFERENCING OLD TABLE AS old_items
    FOR EACH STATEMENT EXECUTE FUNCTION tidings_items_departed();

-- An item moved to another feed (feed merges): those who follow only its old feed no longer
-- see it; its new feed's subscribers see it from the commit on, under a new number unless they
-- saw it already.
CREATE FUNCTION tidings_item_arrival_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE item_id = NEW.id
        AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = NEW.feed_id);
    INSERT INTO sync_pending (item_id) VALUES (NEW.id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_sync_move AFTER UPDATE OF feed_id ON items
    FOR EACH ROW WHEN (OLD.feed_id <> NEW.feed_id)
    EXECUTE FUNCTION tidings_item_arrival_moved();

-- A subscription that ends, or moves to another feed, loses its old feed's items at once.
CREATE FUNCTION tidings_subscription_departed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.user_id
        AND item_id IN (SELECT id FROM items WHERE feed_id = OLD.feed_id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER subscriptions_sync_departure AFTER DELETE ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION tidings_subscription_departed();
CREATE TRIGGER subscriptions_sync_move AFTER UPDATE OF feed_id ON subscriptions
    FOR EACH ROW WHEN (OLD.feed_id <> NEW.feed_id)
    EXECUTE FUNCTION tidings_subscription_departed();

-- A new (or moved) subscription brings its feed's backlog at commit, numbered above all its
-- user has, oldest published first; the subscription as it is then (gone: nothing).
CREATE FUNCTION tidings_subscription_arrived() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    owner BIGINT;
    feed BIGINT;
    backlog BIGINT;
    base BIGINT;
    at_us BIGINT;
BEGIN
    SELECT user_id, feed_id INTO owner, feed FROM subscriptions WHERE id = NEW.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT COUNT(*) INTO backlog FROM items i
    WHERE i.feed_id = feed
      AND NOT EXISTS (SELECT 1 FROM user_items u WHERE u.item_id = i.id AND u.user_id = owner);
    IF backlog = 0 THEN
        RETURN NULL;
    END IF;
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(backlog) t;
    INSERT INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT owner, base + b.position, b.id, at_us + b.position
        FROM (SELECT i.id, ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
              FROM items i
              WHERE i.feed_id = feed
                AND NOT EXISTS (SELECT 1 FROM user_items u
                                WHERE u.item_id = i.id AND u.user_id = owner)) b
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER subscriptions_sync_arrival AFTER INSERT OR UPDATE OF feed_id
    ON subscriptions DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tidings_subscription_arrived();

CREATE FUNCTION tidings_user_departed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER users_sync_departure AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION tidings_user_departed();

-- Version 30 filled user_items with a row per item each user follows: millions on a large
-- installation. Until autovacuum first analyzes it, the planner has no statistics for it
-- and chose plans that made a lookup of items by sync id take ~380 ms; analyzed, ~1 ms.
ANALYZE user_items;
