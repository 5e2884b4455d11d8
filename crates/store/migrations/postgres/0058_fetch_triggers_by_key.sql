-- The triggers of a fetch's writes look rows up by key (issue 38).
--
-- Their plans are cached per connection and made from the statistics of the moment. On an
-- installation filling up (or with autovacuum off, as on the benchmark machine) a plan made
-- while a table had a few pages goes on reading the whole table for every fetch as it grows:
-- the worker's 10,000 feeds took 338 s instead of 205 s with autovacuum on, and the time grew
-- with every item and subscription stored. Each statement below now starts from the fetch's
-- own rows and looks up the rest by key, one row at a time where needed (`OFFSET 0` keeps a
-- lateral look-up a look-up whatever the statistics say; `= ANY` of a list of keys is an
-- index scan at any size worth one).
--
-- The sync clock, most of all. Every fetch that stores new items takes the one-row clock at
-- commit (version 31) and holds it until the commit is on disk, so whatever runs between
-- taking it and committing runs one transaction at a time, for the whole installation. That
-- was the arrival rows' insert, which joined the items with their feeds' subscriptions, and
-- the statement trigger that drops the rows of hidden items, which joined the new rows with
-- `user_items` and `item_states` (13 ms of a 21 ms statement read all 60,000 arrival rows).
-- Now the rows are worked out before the clock is taken (the same items, numbers and
-- subscribers, hidden items left out), and the clock is held for an insert from arrays.
CREATE OR REPLACE FUNCTION tidings_sync_pending_settle() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending BIGINT[];
    users BIGINT[];
    items BIGINT[];
    feeds BIGINT[];
    dates BIGINT[];
    positions BIGINT[];
    wanted BIGINT;
    base BIGINT;
    at_us BIGINT;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sync_pending WHERE item_id = NEW.item_id) THEN
        RETURN NULL;
    END IF;
    WITH taken AS (DELETE FROM sync_pending RETURNING item_id)
    SELECT array_agg(DISTINCT item_id) INTO pending FROM taken;
    -- The items in order, oldest published first; each subscriber who does not hide an item
    -- gets a row for it. Numbers go to items, so a user's rows keep their items' order; an
    -- item nobody gets leaves a gap, as a hidden one did before.
    SELECT array_agg(s.user_id), array_agg(n.id), array_agg(n.feed_id),
           array_agg(n.published_at), array_agg(n.position), MAX(n.position)
      INTO users, items, feeds, dates, positions, wanted
    FROM (SELECT i.id, i.feed_id, i.published_at,
                 ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
          FROM unnest(pending) AS p (id)
          CROSS JOIN LATERAL (SELECT i.id, i.feed_id, i.published_at FROM items i
                              WHERE i.id = p.id OFFSET 0) i) n
    CROSS JOIN LATERAL (SELECT s.user_id FROM subscriptions s
                        WHERE s.feed_id = n.feed_id AND NOT s.suspended
                          AND NOT EXISTS (SELECT 1 FROM item_states h
                                          WHERE h.user_id = s.user_id AND h.item_id = n.id
                                            AND h.is_hidden)
                        OFFSET 0) s;
    IF wanted IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(wanted) t;
    -- Users who already have an item keep its number.
    INSERT INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT r.user_id, base + r.position, r.item_id, at_us + r.position, r.feed_id,
               r.published_at
        FROM unnest(users, positions, items, feeds, dates)
             AS r (user_id, position, item_id, feed_id, published_at)
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

-- Version 40's rule, that a hidden item has no place in its user's arrival order, with each
-- new row's state looked up by its key and each hidden row deleted by its key.
CREATE OR REPLACE FUNCTION tidings_user_items_hidden() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    hidden RECORD;
BEGIN
    FOR hidden IN
        SELECT a.user_id, a.seq FROM added a
        CROSS JOIN LATERAL (SELECT 1 FROM item_states h
                            WHERE h.user_id = a.user_id AND h.item_id = a.item_id
                              AND h.is_hidden
                            OFFSET 0) h
    LOOP
        DELETE FROM user_items WHERE user_id = hidden.user_id AND seq = hidden.seq;
    END LOOP;
    RETURN NULL;
END;
$$;

-- Version 18's counting of new items, with the feeds' subscriptions found by key: each of its
-- three statements read every subscription of the installation when its plan was made with
-- few (1.6-1.9 ms each at 3,000 subscriptions in the worker's run, growing with them). The
-- same locks in the same order (by id).
CREATE OR REPLACE FUNCTION tidings_items_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    subs BIGINT[];
BEGIN
    SELECT array_agg(s.id ORDER BY s.id) INTO subs
    FROM (SELECT DISTINCT feed_id FROM new_items) f
    CROSS JOIN LATERAL (SELECT s.id FROM subscriptions s
                        WHERE s.feed_id = f.feed_id OFFSET 0) s;
    IF subs IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM subscriptions WHERE id = ANY (subs) ORDER BY id FOR NO KEY UPDATE;
    INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
        SELECT s.user_id, n.id, FALSE, FALSE, n.fetched_at
        FROM subscriptions s JOIN new_items n ON n.feed_id = s.feed_id
        WHERE s.id = ANY (subs)
          AND s.read_before IS NOT NULL AND n.published_at <= s.read_before
        ON CONFLICT (user_id, item_id) DO NOTHING;
    UPDATE subscriptions s SET unread_count = s.unread_count + added.unread
    FROM (SELECT sub.id, COUNT(*) AS unread
          FROM subscriptions sub JOIN new_items n ON n.feed_id = sub.feed_id
          WHERE sub.id = ANY (subs)
            AND (sub.read_before IS NULL OR n.published_at > sub.read_before)
          GROUP BY sub.id) added
    WHERE s.id = added.id AND s.id = ANY (subs);
    RETURN NULL;
END;
$$;

-- The worker's claim takes the due feeds oldest first, `ORDER BY next_check_at, feed_id`,
-- a few dozen at a time. The due index ordered by the date alone, so when many feeds were due
-- at once (a first cycle, a restart after a pause: every feed at the same date) each claim
-- read and sorted all of them: 45 ms a claim for 10,000 due feeds with fresh statistics,
-- 0.9 ms with the feed in the key, where the claim walks the index and stops. (SQLite's index
-- holds the feed already: it is the row id.)
DROP INDEX feed_fetch_state_due;
CREATE INDEX feed_fetch_state_due ON feed_fetch_state (next_check_at, feed_id)
    WHERE status <> 'stopped';
