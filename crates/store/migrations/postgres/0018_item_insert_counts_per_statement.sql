-- New items are counted once per INSERT statement instead of once per row (issue 14).
--
-- The row trigger of versions 4 and 5 locked the feed's subscription rows, wrote the late
-- items' unread rows and added 1 to each subscriber's unread_count for every item: a feed's
-- first fetch of 500 items updated the same subscription row 500 times in one transaction,
-- each update a new row version that the next one had to walk past. This statement trigger
-- reads the statement's new rows (a transition table) and does the same work once: the same
-- locks in the same order (so it still waits for a mark-read in flight, see version 5), the
-- same explicit unread rows for items dated under a watermark (their own trigger counts them),
-- and one update per subscription that adds all its new unread items.
CREATE FUNCTION tidings_items_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM subscriptions
    WHERE feed_id IN (SELECT DISTINCT feed_id FROM new_items)
    ORDER BY id FOR NO KEY UPDATE;
    INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
        SELECT s.user_id, n.id, FALSE, FALSE, n.fetched_at
        FROM new_items n JOIN subscriptions s ON s.feed_id = n.feed_id
        WHERE s.read_before IS NOT NULL AND n.published_at <= s.read_before
        ON CONFLICT (user_id, item_id) DO NOTHING;
    UPDATE subscriptions s SET unread_count = s.unread_count + added.unread
    FROM (SELECT sub.id, COUNT(*) AS unread
          FROM new_items n JOIN subscriptions sub ON sub.feed_id = n.feed_id
          WHERE sub.read_before IS NULL OR n.published_at > sub.read_before
          GROUP BY sub.id) added
    WHERE s.id = added.id;
    RETURN NULL;
END;
$$;

DROP TRIGGER items_count_insert ON items;
DROP FUNCTION tidings_item_inserted();
CREATE TRIGGER items_count_insert AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION tidings_items_inserted();
