-- Cheaper label rows at ingest (issue 33): a rule that labels what arrives writes a label row
-- per caught (item, subscriber) pair, the most common outcome of the rules-ingest bench (0.83
-- label rows per outcome), and each row's two foreign keys checked its user and its item by a
-- query of their own (`SELECT … FOR KEY SHARE`, a row trigger per key per row), while all they
-- did for these rows was deleting them with their item or user. Statement triggers on `items`
-- and `users` do that now, at deletion, once per statement. A path that labels an item that
-- was there before its transaction locks the item's and the subscription's rows as the foreign
-- key did (`FOR KEY SHARE`), so that a concurrent deletion cannot leave a label behind; the
-- items of a fetch are its own, inserted in its transaction. (SQLite keeps its foreign keys:
-- there they are a B-tree lookup each, and dropping them measured nothing.)
ALTER TABLE item_labels DROP CONSTRAINT item_labels_user_id_fkey;
ALTER TABLE item_labels DROP CONSTRAINT item_labels_item_id_fkey;

-- The deleted items' and users' labels, looked up by key whatever the planner knows of the
-- transition tables (`= ANY` of an array is an index scan; see version 53).
CREATE FUNCTION items_drop_labels() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_labels WHERE item_id = ANY (ARRAY(SELECT id FROM gone_items));
    RETURN NULL;
END
$$;

CREATE TRIGGER items_labels_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS gone_items
    FOR EACH STATEMENT EXECUTE FUNCTION items_drop_labels();

CREATE FUNCTION users_drop_labels() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_labels WHERE user_id = ANY (ARRAY(SELECT id FROM gone_users));
    RETURN NULL;
END
$$;

CREATE TRIGGER users_labels_delete AFTER DELETE ON users
    REFERENCING OLD TABLE AS gone_users
    FOR EACH STATEMENT EXECUTE FUNCTION users_drop_labels();
