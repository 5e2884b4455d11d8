-- Each arrival row carries its item's feed and publication date (issue 38).
--
-- Whether an item is unread for a user depends on their state row, else on the item's date
-- against its subscription's watermark (`read_before`, moved by "mark all read"): the date and
-- the feed (which subscription) live in `items`, so listing a user's unread sync ids (Fever's
-- `unread_item_ids`, Google Reader's ids with `xt=read`) probed `items` once per arrival row:
-- 100,000 probes, 1.4 of the statement's 1.7 s, for a user with a million unread. With the two
-- numbers here the arrival rows, the user's subscriptions and state rows answer alone, and the
-- key holds them too, so the arrival rows are read from the index alone. The triggers that
-- write arrival rows write them too; an item moved to another feed or given another date
-- changes its rows with it.
--
-- Rows that exist now get theirs in the background, in batches of items (from next_item_id
-- up to last_item_id, `Store::backfill_arrival_dates`), so that the migration does not
-- rewrite every arrival row in one transaction; until that is done the sync queries read the
-- item rows as before. Rebuilding the key takes the table's lock for as long as the index
-- builds: seconds for a million arrival rows.
ALTER TABLE user_items
    ADD COLUMN feed_id BIGINT,
    ADD COLUMN published_at BIGINT,
    DROP CONSTRAINT user_items_pkey,
    ADD CONSTRAINT user_items_pkey PRIMARY KEY (user_id, seq)
        INCLUDE (arrived_us, item_id, feed_id, published_at);

CREATE TABLE arrival_dates_backfill (
    id            BIGINT PRIMARY KEY CHECK (id = 1),
    next_item_id  BIGINT NOT NULL,
    last_item_id  BIGINT NOT NULL
);
INSERT INTO arrival_dates_backfill (id, next_item_id, last_item_id)
SELECT 1, COALESCE(MIN(item_id), 1), COALESCE(MAX(item_id), 0) FROM user_items;

-- Version 39's commit-time numbering of new items, writing each item's feed and date.
CREATE OR REPLACE FUNCTION tidings_sync_pending_settle() RETURNS trigger LANGUAGE plpgsql AS $$
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
      AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = i.feed_id AND NOT s.suspended);
    IF wanted = 0 THEN
        RETURN NULL;
    END IF;
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(wanted) t;
    INSERT INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT s.user_id, base + n.position, n.id, at_us + n.position, n.feed_id, n.published_at
        FROM (SELECT i.id, i.feed_id, i.published_at,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
              FROM items i
              WHERE i.id = ANY (pending)
                AND EXISTS (SELECT 1 FROM subscriptions s
                            WHERE s.feed_id = i.feed_id AND NOT s.suspended)) n
        JOIN subscriptions s ON s.feed_id = n.feed_id AND NOT s.suspended
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

-- Version 39's backlog of a new, moved or resumed subscription, writing feed and date.
CREATE OR REPLACE FUNCTION tidings_subscription_arrived() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    owner BIGINT;
    feed BIGINT;
    backlog BIGINT;
    base BIGINT;
    at_us BIGINT;
BEGIN
    SELECT user_id, feed_id INTO owner, feed FROM subscriptions
    WHERE id = NEW.id AND NOT suspended;
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
    INSERT INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT owner, base + b.position, b.id, at_us + b.position, feed, b.published_at
        FROM (SELECT i.id, i.published_at,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
              FROM items i
              WHERE i.feed_id = feed
                AND NOT EXISTS (SELECT 1 FROM user_items u
                                WHERE u.item_id = i.id AND u.user_id = owner)) b
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

-- An item moved to another feed: the rows of the users who still see it (they follow both
-- feeds) name the new feed; the new feed's other subscribers get theirs at commit.
CREATE OR REPLACE FUNCTION tidings_item_arrival_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM user_items WHERE item_id = NEW.id
        AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = NEW.feed_id);
    UPDATE user_items SET feed_id = NEW.feed_id, published_at = NEW.published_at
        WHERE item_id = NEW.id;
    INSERT INTO sync_pending (item_id) VALUES (NEW.id);
    RETURN NULL;
END;
$$;

-- A feed that gives an item another date (an update of it): its rows follow.
CREATE FUNCTION tidings_item_arrival_date() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE user_items SET feed_id = NEW.feed_id, published_at = NEW.published_at
        WHERE item_id = NEW.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_arrival_date AFTER UPDATE OF published_at ON items
    FOR EACH ROW WHEN (OLD.published_at <> NEW.published_at)
    EXECUTE FUNCTION tidings_item_arrival_date();
