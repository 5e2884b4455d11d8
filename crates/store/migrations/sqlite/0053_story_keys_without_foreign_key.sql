-- Cheaper lookup keys at ingest (issue 35): an item stores about ten `item_story_keys` rows
-- as it arrives, each of which the foreign key to `items` checked against the items' key,
-- while the only thing the foreign key did for these rows was deleting them with their item.
-- A trigger on `items` does that now, at deletion, where it costs what the cascade cost, and
-- inserting a key row is its B-tree entries alone. (Without the deletion, SQLite could give a
-- deleted item's id to a new item, which would inherit the old one's keys.)
--
-- SQLite cannot drop a foreign key, so the table is rebuilt: it holds the keys of the last
-- two weeks' items.
CREATE TABLE item_story_keys_rebuilt (
    key      INTEGER NOT NULL,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (key, item_id)
) WITHOUT ROWID;
INSERT INTO item_story_keys_rebuilt (key, item_id)
    SELECT key, item_id FROM item_story_keys
    WHERE item_id IN (SELECT id FROM items);
DROP TABLE item_story_keys;
ALTER TABLE item_story_keys_rebuilt RENAME TO item_story_keys;
-- For the deletion below and for retention's pruning, which walks the oldest items' keys.
CREATE INDEX item_story_keys_item ON item_story_keys (item_id);

CREATE TRIGGER items_story_keys_delete AFTER DELETE ON items
BEGIN
    DELETE FROM item_story_keys WHERE item_id = OLD.id;
END;
