-- Cheaper lookup keys at ingest (issue 35): an item stores about ten `item_story_keys` rows
-- as it arrives, and the foreign key to `items` checked each of them by a query of its own
-- (`SELECT … FOR KEY SHARE`, a row trigger per key row), while the only thing it did for these
-- rows was deleting them with their item. A statement trigger on `items` does that now, at
-- deletion, once per statement, and inserting a key row is its heap tuple and index entries
-- alone.
ALTER TABLE item_story_keys DROP CONSTRAINT item_story_keys_item_id_fkey;

-- The deleted items' keys, looked up by `item_story_keys_item` whatever the planner knows of
-- the tables (`= ANY` of an array is an index scan, which a join of the deleted rows without
-- statistics might not be).
CREATE FUNCTION items_drop_story_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_story_keys WHERE item_id = ANY (ARRAY(SELECT id FROM gone_items));
    RETURN NULL;
END
$$;

CREATE TRIGGER items_story_keys_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS gone_items
    FOR EACH STATEMENT EXECUTE FUNCTION items_drop_story_keys();
