-- A subscription's end looks its user's arrival rows up by key, whatever the table held when
-- its plan was made.
--
-- Version 60's departure trigger asks, for each of the feed's items, for the user's arrival
-- row of it, with a generic plan made at the first unsubscription on a connection and kept
-- while the connection lives. Made while `user_items` was empty (a new installation whose
-- first user tries a feed and drops it), the look-up was planned as a sequential scan of the
-- table and stayed one as the rows grew: every later unsubscription on that connection read
-- all of the table for each of the feed's items (396,500 rows in the test for 20 feeds of 25
-- items, with 1,000 rows in the table). With scans off it was planned as a scan of the user's
-- rows in the primary key (520,000 entries): the question wants the row's `seq`, which the
-- primary key carries and the unique key (item, user) does not, and on an empty table reading
-- the index alone looked cheaper than one probe and a visit to the row.
--
-- Now each of the feed's items is deleted by itself, by item and user: both columns of the
-- unique key, so at most one row, which no plan over the primary key beats at any size. The
-- items come from their feed's index (scans off: no plan made while `items` was empty reads
-- all items later; `jit` off with them, since the cost of an avoided scan would otherwise call
-- for compiling the statement). A statement per item costs about what the look-up did.
CREATE OR REPLACE FUNCTION tidings_subscription_departed() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
DECLARE
    item BIGINT;
BEGIN
    FOR item IN SELECT id FROM items WHERE feed_id = OLD.feed_id LOOP
        DELETE FROM user_items WHERE item_id = item AND user_id = OLD.user_id;
    END LOOP;
    RETURN NULL;
END;
$$;
