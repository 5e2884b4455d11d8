-- A subscription's triggers look its user's arrival rows up by key.
--
-- A new subscription's backlog asks, for each of its feed's items, whether its user already
-- has the item (`NOT EXISTS` on `user_items`). The planner turned that into an anti-join, and
-- for a user the statistics do not know yet (every new user, until the next `ANALYZE`) it
-- estimated one arrival row and read all of them for every item: a new user subscribing to
-- many feeds (an OPML import of feeds other users already follow, 84 items each) compared
-- each feed's items with every row brought by the feeds before. Committing 100 such
-- subscriptions in one transaction took 3.1 s (after 20: 1,680 rows), growing with the
-- square of the rows. `OFFSET 0` keeps the question a look-up for each item, and the
-- functions' plans are generic (`plan_cache_mode`): planned for the user's value, a user the
-- statistics do not know still had each look-up read all of the user's rows by the primary
-- key (the same 100: 17.9 s), where the generic plan takes `user_items_item` (item, user),
-- one entry a look-up, for any user (0.17 s; 380 more: 0.63 s).
--
-- A subscription's end (and each of a deleted user's subscriptions) deleted its feed's items
-- by reading all of its user's arrival rows and probing each in `items`: 5 ms a subscription
-- at 42,000 rows, 20 s to delete a user with 500 subscriptions (0.45 s now). Now the feed's
-- items are probed in `user_items_item` and the rows found are deleted by their primary key.
CREATE OR REPLACE FUNCTION tidings_subscription_arrived() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
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
      AND NOT EXISTS (SELECT 1 FROM user_items u WHERE u.item_id = i.id AND u.user_id = owner
                      OFFSET 0);
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
                                WHERE u.item_id = i.id AND u.user_id = owner OFFSET 0)) b
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION tidings_subscription_departed() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    DELETE FROM user_items WHERE user_id = OLD.user_id
        AND seq = ANY (ARRAY(
            SELECT u.seq FROM items i
            CROSS JOIN LATERAL (SELECT u.seq FROM user_items u
                                WHERE u.item_id = i.id AND u.user_id = OLD.user_id
                                OFFSET 0) u
            WHERE i.feed_id = OLD.feed_id));
    RETURN NULL;
END;
$$;
