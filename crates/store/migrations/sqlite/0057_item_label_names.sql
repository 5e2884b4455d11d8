-- Label rows without a by-label index (issue 33). A rule that labels what arrives writes a
-- label row per caught (item, subscriber) pair, the most common outcome of the rules-ingest
-- bench (0.83 label rows per outcome). The row's key, (item_id, user_id, label), lands at the
-- right edge of its tree, one leaf a fetch (the items are new); its item_labels_by_label
-- entry, (user_id, label, item_id), landed in its user's and label's own leaf, about 20
-- leaves a fetch of a feed with ten subscribers, each written whole into the WAL at commit and
-- again at the checkpoint: 37-43 % of what rules added to ingest (docs/benchmarks.md).
--
-- What read that index: the list of a user's labels (every Google Reader tag/list and
-- unread-count), renaming and deleting a label, a user's deletion. The list is now
-- item_label_names, each user's labels with how many items carry them: a label whose last
-- item goes leaves the list, as it did. The paths that add labels count what they added, once
-- a statement (a fetch's rules: one upsert of a few rows, in a table of a few pages); the
-- triggers below count what goes (deletes are rare and already per row: an item's cascade, a
-- label taken off) and what a rename moves. Renaming and deleting a label and deleting a user
-- scan item_labels (a B-tree scan, about 10 million rows a second); the label streams probe the
-- key (item, user, label) and never read the index.
CREATE TABLE item_label_names (
    user_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label    TEXT    NOT NULL,
    items    INTEGER NOT NULL CHECK (items > 0),
    PRIMARY KEY (user_id, label)
) WITHOUT ROWID;

INSERT INTO item_label_names (user_id, label, items)
    SELECT user_id, label, COUNT(*) FROM item_labels GROUP BY user_id, label;

-- A row that goes takes one from its label's count, and the name with the last one.
CREATE TRIGGER item_labels_names_delete AFTER DELETE ON item_labels
BEGIN
    DELETE FROM item_label_names
    WHERE user_id = OLD.user_id AND label = OLD.label AND items <= 1;
    UPDATE item_label_names SET items = items - 1
    WHERE user_id = OLD.user_id AND label = OLD.label;
END;

-- A renamed row moves from its old label's count to its new one's.
CREATE TRIGGER item_labels_names_update AFTER UPDATE OF user_id, label ON item_labels
BEGIN
    DELETE FROM item_label_names
    WHERE user_id = OLD.user_id AND label = OLD.label AND items <= 1;
    UPDATE item_label_names SET items = items - 1
    WHERE user_id = OLD.user_id AND label = OLD.label;
    INSERT INTO item_label_names (user_id, label, items) VALUES (NEW.user_id, NEW.label, 1)
        ON CONFLICT (user_id, label) DO UPDATE SET items = items + 1;
END;

DROP INDEX item_labels_by_label;
