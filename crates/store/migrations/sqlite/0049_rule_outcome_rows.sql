-- Fewer B-tree entries per state row and per label row (issue 33): what a rule's outcome
-- writes when an item arrives, hundreds of rows a fetch. Both tables are rebuilt
-- WITHOUT ROWID, so that a row lives in its primary key's B-tree alone instead of a rowid
-- table plus that key's index.
--
-- item_states keeps its key (user_id, item_id), its indexes and its triggers: 3 entries a
-- row become 2 (plus the partial unread or starred index where the row is unread or starred).
--
-- item_labels is keyed by (item_id, user_id, label): that key also finds an item's labels
-- when the item is deleted (the cascade), which item_labels_item did, and a user's labels
-- are found by item_labels_by_label, which starts with user_id. 4 entries a row become 2.
--
-- Other tables' triggers name item_states; SQLite (since 3.26) refuses to rename a table
-- while a trigger names a table that is not there, so the rename runs with
-- legacy_alter_table, which leaves those triggers' text alone (they name the new table by the
-- same name afterwards).
PRAGMA legacy_alter_table = ON;

CREATE TABLE item_states_rebuilt (
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    is_read     INTEGER NOT NULL DEFAULT 0 CHECK (is_read IN (0, 1)),
    is_starred  INTEGER NOT NULL DEFAULT 0 CHECK (is_starred IN (0, 1)),
    updated_at  INTEGER NOT NULL,
    is_hidden   INTEGER NOT NULL DEFAULT 0 CHECK (is_hidden IN (0, 1)),
    PRIMARY KEY (user_id, item_id)
) WITHOUT ROWID;
INSERT INTO item_states_rebuilt (user_id, item_id, is_read, is_starred, updated_at, is_hidden)
    SELECT user_id, item_id, is_read, is_starred, updated_at, is_hidden FROM item_states;
DROP TABLE item_states;
ALTER TABLE item_states_rebuilt RENAME TO item_states;
CREATE INDEX item_states_item ON item_states (item_id);
CREATE INDEX item_states_starred ON item_states (user_id, item_id) WHERE is_starred = 1;
CREATE INDEX item_states_unread ON item_states (user_id, item_id) WHERE NOT is_read;

-- The count triggers of version 4, as they were (they went with the old table).
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

CREATE TABLE item_labels_rebuilt (
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    label       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (item_id, user_id, label)
) WITHOUT ROWID;
INSERT INTO item_labels_rebuilt (user_id, item_id, label, created_at)
    SELECT user_id, item_id, label, created_at FROM item_labels;
DROP TABLE item_labels;
ALTER TABLE item_labels_rebuilt RENAME TO item_labels;
CREATE INDEX item_labels_by_label ON item_labels (user_id, label, item_id);

PRAGMA legacy_alter_table = OFF;
