-- The read model (F31, F32): a read watermark and a maintained unread counter per
-- subscription, so that marking a feed read and counting unread items cost the same whether a
-- feed has ten items or ten thousand.
--
-- An item counts as read for a user when an item_states row says so, or, without a row, when
-- it was published at or before its subscription's read_before. Marking a feed read moves the
-- watermark instead of writing one row per item. unread_count is kept exact by the triggers
-- below on every path that changes items, states or subscriptions (the API, the fetch worker,
-- retention, feed moves), so no code has to remember to update it.

ALTER TABLE subscriptions ADD COLUMN read_before BIGINT;
ALTER TABLE subscriptions ADD COLUMN unread_count BIGINT NOT NULL DEFAULT 0;

-- Explicit "unread" rows, looked up when a watermark moves and when listing unread items.
CREATE INDEX item_states_unread ON item_states (user_id, item_id) WHERE NOT is_read;
-- "Updated since" (F36): a feed's items by arrival time.
CREATE INDEX items_feed_fetched ON items (feed_id, fetched_at);

-- A subscription's unread items: above the watermark without a read row, plus explicit
-- unread rows at or below it.
CREATE FUNCTION tidings_unread_count(sub_user BIGINT, sub_feed BIGINT, watermark BIGINT)
RETURNS BIGINT LANGUAGE sql STABLE AS $$
    SELECT (SELECT COUNT(*) FROM items i
            WHERE i.feed_id = sub_feed
              AND i.published_at > COALESCE(watermark, -9223372036854775807)
              AND NOT EXISTS (SELECT 1 FROM item_states st
                              WHERE st.user_id = sub_user AND st.item_id = i.id AND st.is_read))
         + (SELECT COUNT(*) FROM item_states st CROSS JOIN items i
            WHERE i.id = st.item_id
              AND st.user_id = sub_user AND NOT st.is_read AND i.feed_id = sub_feed
              AND i.published_at <= COALESCE(watermark, -9223372036854775807))
$$;

UPDATE subscriptions SET unread_count = tidings_unread_count(user_id, feed_id, read_before);

-- Recounted when a subscription is created, moves to another feed (feed merges) or its
-- watermark moves.
CREATE FUNCTION tidings_subscription_recount() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.unread_count := tidings_unread_count(NEW.user_id, NEW.feed_id, NEW.read_before);
    RETURN NEW;
END;
$$;

CREATE TRIGGER subscriptions_count_insert BEFORE INSERT ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION tidings_subscription_recount();
CREATE TRIGGER subscriptions_count_update BEFORE UPDATE OF feed_id, read_before ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION tidings_subscription_recount();

-- A new item is unread for every subscriber. For a subscriber whose watermark is already past
-- the item's date (an item that arrives late, dated in the past), an explicit unread row keeps
-- it from being hidden under the watermark: items that arrive while the user reads are not
-- lost. That row's own trigger counts it; the others are counted here.
CREATE FUNCTION tidings_item_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
CREATE TRIGGER items_count_insert AFTER INSERT ON items
    FOR EACH ROW EXECUTE FUNCTION tidings_item_inserted();

-- A deleted item leaves its unread subscribers' counts. Its state rows are removed first (their
-- trigger brings each count back to the watermark's verdict), so the order in which the
-- engine cascades does not matter.
CREATE FUNCTION tidings_item_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_states WHERE item_id = OLD.id;
    UPDATE subscriptions SET unread_count = unread_count - 1
    WHERE feed_id = OLD.feed_id AND (read_before IS NULL OR OLD.published_at > read_before);
    RETURN OLD;
END;
$$;
CREATE TRIGGER items_count_delete BEFORE DELETE ON items
    FOR EACH ROW EXECUTE FUNCTION tidings_item_deleted();

-- An item that changes feed (merges) or date may cross a watermark.
CREATE FUNCTION tidings_item_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE subscriptions s SET unread_count = unread_count - 1
    WHERE s.feed_id = OLD.feed_id
      AND NOT COALESCE((SELECT st.is_read FROM item_states st
                        WHERE st.user_id = s.user_id AND st.item_id = OLD.id),
                       s.read_before IS NOT NULL AND OLD.published_at <= s.read_before);
    UPDATE subscriptions s SET unread_count = unread_count + 1
    WHERE s.feed_id = NEW.feed_id
      AND NOT COALESCE((SELECT st.is_read FROM item_states st
                        WHERE st.user_id = s.user_id AND st.item_id = NEW.id),
                       s.read_before IS NOT NULL AND NEW.published_at <= s.read_before);
    RETURN NULL;
END;
$$;
CREATE TRIGGER items_count_update AFTER UPDATE OF feed_id, published_at ON items
    FOR EACH ROW
    WHEN (OLD.feed_id <> NEW.feed_id OR OLD.published_at <> NEW.published_at)
    EXECUTE FUNCTION tidings_item_moved();

-- A state row replaces the watermark's verdict for its item: count the difference.
CREATE FUNCTION tidings_item_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    state_user BIGINT;
    state_item BIGINT;
    item_feed BIGINT;
    item_published BIGINT;
    read_before_change BOOLEAN;
    read_after_change BOOLEAN;
BEGIN
    IF TG_OP = 'DELETE' THEN
        state_user := OLD.user_id;
        state_item := OLD.item_id;
    ELSE
        state_user := NEW.user_id;
        state_item := NEW.item_id;
    END IF;
    SELECT feed_id, published_at INTO item_feed, item_published FROM items WHERE id = state_item;
    IF item_feed IS NULL THEN
        RETURN NULL;
    END IF;
    -- NULL stands for "the watermark decides".
    read_before_change := CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.is_read END;
    read_after_change := CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.is_read END;
    UPDATE subscriptions s SET unread_count = unread_count
        + (CASE WHEN COALESCE(read_after_change,
                              s.read_before IS NOT NULL AND item_published <= s.read_before)
                THEN 0 ELSE 1 END)
        - (CASE WHEN COALESCE(read_before_change,
                              s.read_before IS NOT NULL AND item_published <= s.read_before)
                THEN 0 ELSE 1 END)
    WHERE s.user_id = state_user AND s.feed_id = item_feed;
    RETURN NULL;
END;
$$;
CREATE TRIGGER item_states_count_insert AFTER INSERT ON item_states
    FOR EACH ROW EXECUTE FUNCTION tidings_item_state_changed();
CREATE TRIGGER item_states_count_update AFTER UPDATE OF is_read ON item_states
    FOR EACH ROW WHEN (OLD.is_read <> NEW.is_read)
    EXECUTE FUNCTION tidings_item_state_changed();
CREATE TRIGGER item_states_count_delete AFTER DELETE ON item_states
    FOR EACH ROW EXECUTE FUNCTION tidings_item_state_changed();
