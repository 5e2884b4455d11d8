-- Tag rows without foreign keys (issue 38), as label rows since version 55.
--
-- The tagging job writes about eight tag rows per new item, and each row's two foreign keys
-- checked its item and its tag with a query of their own (`SELECT … FOR KEY SHARE`, a row
-- trigger per key per row): 4.6 ms of a 6.5 ms insert of 160 rows, the largest single cost of
-- the database in the worker's 10,000-feed run once its triggers looked rows up by key
-- (version 58). The lock on the tag's row is also taken by every concurrent batch that uses a
-- common tag. Tags are never deleted. Deleting items (retention, a feed's removal) drops
-- their tag rows by a statement trigger, once per statement.
--
-- A tagging batch writes an item's rows only after deleting the item's queue row at its
-- version (`tag_jobs`, whose foreign key to the item stays): an item deleted before that has
-- no queue row left and gets no tags; one deleted after it waits, in the deletion's cascade
-- to the queue row, for the batch to commit, and its statement trigger then sees and deletes
-- the batch's rows. So no tag row outlives its item. (SQLite keeps its foreign keys: there
-- they are a B-tree lookup each.)
ALTER TABLE item_tags DROP CONSTRAINT item_tags_item_id_fkey;
ALTER TABLE item_tags DROP CONSTRAINT item_tags_tag_id_fkey;

-- The deleted items' tags, looked up by key whatever the planner knows of the transition
-- table (`= ANY` of an array is an index scan; see version 53).
CREATE FUNCTION items_drop_tags() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_tags WHERE item_id = ANY (ARRAY(SELECT id FROM gone_items));
    RETURN NULL;
END
$$;

CREATE TRIGGER items_tags_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS gone_items
    FOR EACH STATEMENT EXECUTE FUNCTION items_drop_tags();
