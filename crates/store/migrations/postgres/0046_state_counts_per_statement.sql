-- New state rows are counted once per INSERT statement instead of once per row (issue 33).
--
-- The row trigger of version 4 ran a PL/pgSQL function for every state row: a read of the
-- item and an update of its subscription. Rules at ingest write a fetch's state rows (hidden,
-- read, starred) in one statement, hundreds of rows, and the row trigger was most of their
-- cost: about 250 µs a row against 100 µs with this trigger (a fetch's items and 30 % of
-- their subscribers' rows, paired runs on one database). This statement trigger reads the
-- statement's new rows (a transition table) and does the same arithmetic: each row replaces
-- the watermark's verdict for its item with its own, and each subscription gets the sum of
-- its rows' differences in one update. Rows of items that are gone count nothing, as before.
-- The subscriptions are locked in id order first, as version 18's item trigger does, so that
-- two statements never take them in opposite orders. Updates and deletes of state rows keep
-- their row triggers (an update's trigger needs the row's old value, which PostgreSQL gives a
-- statement trigger with a column list no transition table).
CREATE FUNCTION tidings_item_states_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM subscriptions s
    WHERE EXISTS (SELECT 1 FROM new_states n JOIN items i ON i.id = n.item_id
                  WHERE s.user_id = n.user_id AND s.feed_id = i.feed_id)
    ORDER BY s.id FOR NO KEY UPDATE;
    UPDATE subscriptions s SET unread_count = s.unread_count + changed.delta
    FROM (SELECT sub.id,
                 SUM((CASE WHEN n.is_read THEN 0 ELSE 1 END)
                     - (CASE WHEN sub.read_before IS NOT NULL
                                  AND i.published_at <= sub.read_before
                             THEN 0 ELSE 1 END)) AS delta
          FROM new_states n
          JOIN items i ON i.id = n.item_id
          JOIN subscriptions sub ON sub.user_id = n.user_id AND sub.feed_id = i.feed_id
          GROUP BY sub.id) changed
    WHERE s.id = changed.id AND changed.delta <> 0;
    RETURN NULL;
END;
$$;

DROP TRIGGER item_states_count_insert ON item_states;
CREATE TRIGGER item_states_count_insert AFTER INSERT ON item_states
    REFERENCING NEW TABLE AS new_states
    FOR EACH STATEMENT EXECUTE FUNCTION tidings_item_states_inserted();
