-- A user's pause of a subscription (`suspended`). Feeds are shared, so pausing one's own
-- subscription must not stop the feed for others: a feed is fetched while at least one of
-- its subscriptions is not paused, and a paused subscription's user gets no new items into
-- their arrival order (user_items). Resuming brings what arrived meanwhile the way a new
-- subscription brings a shared feed's backlog (at commit, numbered above everything the
-- user has), so sync apps find it above their marks.
ALTER TABLE subscriptions ADD COLUMN suspended BOOLEAN NOT NULL DEFAULT FALSE;

-- The due query asks whether a feed has a subscription that is not paused: the index
-- answers that without reading subscription rows.
DROP INDEX subscriptions_feed;
CREATE INDEX subscriptions_feed ON subscriptions (feed_id, suspended);

-- Version 31's commit-time numbering of new items, for subscribers that are not paused.
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
    INSERT INTO user_items (user_id, seq, item_id, arrived_us)
        SELECT s.user_id, base + n.position, n.id, at_us + n.position
        FROM (SELECT i.id, i.feed_id,
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

-- A new, moved or resumed subscription brings its feed's items its user does not have yet
-- at commit, numbered above all they have, oldest published first; the subscription as it
-- is then (gone or paused: nothing).
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
CREATE CONSTRAINT TRIGGER subscriptions_sync_resume AFTER UPDATE OF suspended
    ON subscriptions DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.suspended AND NOT NEW.suspended)
    EXECUTE FUNCTION tidings_subscription_arrived();
