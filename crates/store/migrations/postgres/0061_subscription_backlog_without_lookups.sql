-- A new subscription's backlog is numbered without looking the user's arrival rows up.
--
-- Version 60 made the backlog trigger's plans generic so that its question, per item,
-- whether the user already has it, was one probe of `user_items_item` for any user. A generic
-- plan is made at the function's first run on a connection and kept while the connection
-- lives, unless an `ANALYZE` (autovacuum's or anyone's) invalidates it. Made while
-- `user_items` was empty (a new installation, one a bulk load filled, the first subscriber of
-- a set of feeds), the question was planned as a sequential scan of the table, or, with scans
-- off, as a scan of the user's rows in the primary key (which carries `item_id` since version
-- 52), and it stayed one as the rows grew: a user subscribing to many feeds in one
-- transaction read, for every item, all the rows the feeds before had brought (975,000 rows
-- for 1,000 arrivals in the test; generating the sync benchmark's 20 users of 500 feeds took
-- 25 minutes, the first user alone over 80 seconds).
--
-- The question is not needed: `ON CONFLICT DO NOTHING` on the unique key (item, user) skips
-- an item the user already has (a subscription resumed or moved, feeds merged), and the clock
-- hands out as many numbers as the feed has items, so such an item leaves a number unused (the
-- numbers only have to grow). What is left reads the feed's items, by their feed's index:
-- scans are off for the function so that no plan made while `items` was empty reads all items
-- later; `jit` is off with them, since the cost of an avoided scan would otherwise call for
-- compiling the statement (tidings' own connections have it off already).
--
-- A subscription's end (version 60) still asks per item; its plan is made on its connection's
-- first unsubscription, when the user has rows to drop.
CREATE OR REPLACE FUNCTION tidings_subscription_arrived() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
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
    SELECT COUNT(*) INTO backlog FROM items i WHERE i.feed_id = feed;
    IF backlog = 0 THEN
        RETURN NULL;
    END IF;
    SELECT t.base, t.at_us INTO base, at_us FROM tidings_sync_clock_take(backlog) t;
    INSERT INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
        SELECT owner, base + b.position, b.id, at_us + b.position, feed, b.published_at
        FROM (SELECT i.id, i.published_at,
                     ROW_NUMBER() OVER (ORDER BY i.published_at, i.id) AS position
              FROM items i
              WHERE i.feed_id = feed) b
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
