-- A transaction's pending items are found by the transaction, not by reading the whole table.
--
-- Items that reach their feed wait in `sync_pending` until their transaction commits, when the
-- first of them numbers them all (versions 31 and 58) and deletes them: `DELETE FROM
-- sync_pending`, every row the transaction can see. Each fetch leaves its rows dead, and until
-- a vacuum reclaims them that statement reads every page of them: where autovacuum is off or
-- behind (it is off on the benchmark machine), it took 8.1 ms a fetch at 100,000 feeds, 810 s
-- of the first cycle's database time. Each row now carries its transaction's id, and the
-- pending rows, and the question whether an item is still pending, are read from an index
-- that starts with it: pages of other transactions' rows, live or dead, are never visited.
-- `pg_current_xact_id()` is the top transaction's id, also inside a savepoint.
ALTER TABLE sync_pending ADD COLUMN tx XID8 NOT NULL DEFAULT pg_current_xact_id();
DROP INDEX sync_pending_item;
CREATE INDEX sync_pending_tx ON sync_pending (tx, item_id);

-- Version 58's numbering at commit, reading the transaction's own rows by the index.
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
    this_tx XID8 := pg_current_xact_id();
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sync_pending WHERE tx = this_tx AND item_id = NEW.item_id)
    THEN
        RETURN NULL;
    END IF;
    WITH taken AS (DELETE FROM sync_pending WHERE tx = this_tx RETURNING item_id)
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
