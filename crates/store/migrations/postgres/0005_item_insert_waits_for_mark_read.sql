-- Items arriving while their feed is being marked read (F32): "items that arrive while the user
-- reads are not lost".
--
-- Under READ COMMITTED, a fetch inserting an item and a mark-read moving a watermark could each
-- miss the other's uncommitted change: the item's trigger read the old watermark (so no explicit
-- unread row was written for a late item dated under the new one, and it was hidden as read),
-- and the mark-read's recount missed the new item (so the counter drifted). Both sides now lock
-- the subscription rows they depend on before reading them: the mark-read in its first
-- statement, the item trigger here. Whichever comes second waits for the first to commit, and
-- its following statements see the committed state. (SQLite has one writer and no such race.)
CREATE OR REPLACE FUNCTION tidings_item_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM subscriptions WHERE feed_id = NEW.feed_id ORDER BY id FOR NO KEY UPDATE;
    INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
        SELECT s.user_id, NEW.id, FALSE, FALSE, NEW.fetched_at FROM subscriptions s
        WHERE s.feed_id = NEW.feed_id AND s.read_before IS NOT NULL
          AND NEW.published_at <= s.read_before
        ON CONFLICT (user_id, item_id) DO NOTHING;
    UPDATE subscriptions SET unread_count = unread_count + 1
    WHERE feed_id = NEW.feed_id AND (read_before IS NULL OR NEW.published_at > read_before);
    RETURN NULL;
END;
$$;
