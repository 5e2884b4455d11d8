-- The read model (F31, F32): a read watermark and a maintained unread counter per
-- subscription, so that marking a feed read and counting unread items cost the same whether a
-- feed has ten items or ten thousand.
--
-- An item counts as read for a user when an item_states row says so, or, without a row, when
-- it was published at or before its subscription's read_before. Marking a feed read moves the
-- watermark instead of writing one row per item. unread_count is kept exact by the triggers
-- below on every path that changes items, states or subscriptions (the API, the fetch worker,
-- retention, feed moves), so no code has to remember to update it.

ALTER TABLE subscriptions ADD COLUMN read_before INTEGER;
ALTER TABLE subscriptions ADD COLUMN unread_count INTEGER NOT NULL DEFAULT 0;

-- Explicit "unread" rows, looked up when a watermark moves and when listing unread items.
CREATE INDEX item_states_unread ON item_states (user_id, item_id) WHERE NOT is_read;
-- "Updated since" (F36): a feed's items by arrival time.
CREATE INDEX items_feed_fetched ON items (feed_id, fetched_at);

UPDATE subscriptions SET unread_count =
    (SELECT COUNT(*) FROM items i
     WHERE i.feed_id = subscriptions.feed_id
       AND NOT EXISTS (SELECT 1 FROM item_states st
                       WHERE st.user_id = subscriptions.user_id AND st.item_id = i.id
                         AND st.is_read = 1));

-- A subscription's counter is recounted when it is created, moves to another feed (feed
-- merges) or its watermark moves: items above the watermark without a read row, plus
-- explicit unread rows at or below it. (The explicit rows are reached from the user's few state
-- rows, CROSS JOIN keeping SQLite from walking the feed's items instead.)
-- (Creation touches read_before so that the update trigger below does the counting.)
CREATE TRIGGER subscriptions_count_insert AFTER INSERT ON subscriptions
BEGIN
    UPDATE subscriptions SET read_before = read_before WHERE id = NEW.id;
END;

CREATE TRIGGER subscriptions_count_update AFTER UPDATE OF feed_id, read_before ON subscriptions
BEGIN
    UPDATE subscriptions SET unread_count =
        (SELECT COUNT(*) FROM items i
         WHERE i.feed_id = NEW.feed_id
           AND i.published_at > COALESCE(NEW.read_before, -9223372036854775807)
           AND NOT EXISTS (SELECT 1 FROM item_states st
                           WHERE st.user_id = NEW.user_id AND st.item_id = i.id AND st.is_read = 1))
      + (SELECT COUNT(*) FROM item_states st CROSS JOIN items i
         WHERE i.id = st.item_id
           AND st.user_id = NEW.user_id AND NOT st.is_read AND i.feed_id = NEW.feed_id
           AND i.published_at <= COALESCE(NEW.read_before, -9223372036854775807))
    WHERE id = NEW.id;
END;

-- A new item is unread for every subscriber. For a subscriber whose watermark is already past
-- the item's date (an item that arrives late, dated in the past), an explicit unread row keeps
-- it from being hidden under the watermark: items that arrive while the user reads are not
-- lost. That row's own trigger counts it; the others are counted here.
CREATE TRIGGER items_count_insert AFTER INSERT ON items
BEGIN
    INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
        SELECT s.user_id, NEW.id, 0, 0, NEW.fetched_at FROM subscriptions s
        WHERE s.feed_id = NEW.feed_id AND s.read_before IS NOT NULL
          AND NEW.published_at <= s.read_before
        ON CONFLICT (user_id, item_id) DO NOTHING;
    UPDATE subscriptions SET unread_count = unread_count + 1
    WHERE feed_id = NEW.feed_id AND (read_before IS NULL OR NEW.published_at > read_before);
END;

-- A deleted item leaves its unread subscribers' counts. Its state rows are removed first (their
-- trigger brings each count back to the watermark's verdict), so the order in which the
-- engine cascades does not matter.
CREATE TRIGGER items_count_delete BEFORE DELETE ON items
BEGIN
    DELETE FROM item_states WHERE item_id = OLD.id;
    UPDATE subscriptions SET unread_count = unread_count - 1
    WHERE feed_id = OLD.feed_id AND (read_before IS NULL OR OLD.published_at > read_before);
END;

-- An item that changes feed (merges) or date may cross a watermark.
CREATE TRIGGER items_count_update AFTER UPDATE OF feed_id, published_at ON items
WHEN OLD.feed_id <> NEW.feed_id OR OLD.published_at <> NEW.published_at
BEGIN
    UPDATE subscriptions SET unread_count = unread_count - 1
    WHERE feed_id = OLD.feed_id
      AND NOT COALESCE((SELECT st.is_read FROM item_states st
                        WHERE st.user_id = subscriptions.user_id AND st.item_id = OLD.id),
                       read_before IS NOT NULL AND OLD.published_at <= read_before);
    UPDATE subscriptions SET unread_count = unread_count + 1
    WHERE feed_id = NEW.feed_id
      AND NOT COALESCE((SELECT st.is_read FROM item_states st
                        WHERE st.user_id = subscriptions.user_id AND st.item_id = NEW.id),
                       read_before IS NOT NULL AND NEW.published_at <= read_before);
END;

-- A state row replaces the watermark's verdict for its item: count the difference.
CREATE TRIGGER item_states_count_insert AFTER INSERT ON item_states
BEGIN
    UPDATE subscriptions SET unread_count = unread_count
        + (CASE WHEN NEW.is_read THEN 0 ELSE 1 END)
        - (CASE WHEN read_before IS NOT NULL
                     AND (SELECT published_at FROM items WHERE id = NEW.item_id) <= read_before
                THEN 0 ELSE 1 END)
    WHERE user_id = NEW.user_id
      AND feed_id = (SELECT feed_id FROM items WHERE id = NEW.item_id);
END;

CREATE TRIGGER item_states_count_update AFTER UPDATE OF is_read ON item_states
WHEN OLD.is_read <> NEW.is_read
BEGIN
    UPDATE subscriptions SET unread_count = unread_count + (CASE WHEN NEW.is_read THEN -1 ELSE 1 END)
    WHERE user_id = NEW.user_id
      AND feed_id = (SELECT feed_id FROM items WHERE id = NEW.item_id);
END;

CREATE TRIGGER item_states_count_delete AFTER DELETE ON item_states
BEGIN
    UPDATE subscriptions SET unread_count = unread_count
        + (CASE WHEN read_before IS NOT NULL
                     AND (SELECT published_at FROM items WHERE id = OLD.item_id) <= read_before
                THEN 0 ELSE 1 END)
        - (CASE WHEN OLD.is_read THEN 0 ELSE 1 END)
    WHERE user_id = OLD.user_id
      AND feed_id = (SELECT feed_id FROM items WHERE id = OLD.item_id);
END;
