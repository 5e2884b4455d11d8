-- Rules (issue 33): a user's conditions and actions, run on each item as it arrives for each
-- subscriber, previewed, and applied once to what is there.
--
-- `spec` holds the conditions and actions as the API writes them (JSON, checked by
-- tidings-rules when saved); the scope lives in columns, so that a fetch reads only the rules
-- of its feed's subscribers that can apply to it, and a group or feed that goes takes its
-- rules with it (a rule scoped to a group must not become a rule for everything).
CREATE TABLE rules (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    position    INTEGER NOT NULL,
    feed_id     INTEGER REFERENCES feeds (id) ON DELETE CASCADE,
    group_id    INTEGER REFERENCES feed_groups (id) ON DELETE CASCADE,
    spec        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX rules_user ON rules (user_id, position, id);
-- A fetch's question: the enabled rules of this feed's subscribers.
CREATE INDEX rules_feed ON rules (feed_id) WHERE feed_id IS NOT NULL;

-- A hidden item is read (so every count and unread view leaves it out already) and hidden
-- (so the views of read and starred items leave it out too).
ALTER TABLE item_states ADD COLUMN is_hidden INTEGER NOT NULL DEFAULT 0 CHECK (is_hidden IN (0, 1));

-- A hidden item has no place in its user's arrival order, whichever path would give it one
-- (a new item, a subscription's backlog, a resumed or moved subscription): the sync APIs
-- list only what is there.
CREATE TRIGGER user_items_hidden AFTER INSERT ON user_items
WHEN EXISTS (SELECT 1 FROM item_states
             WHERE user_id = NEW.user_id AND item_id = NEW.item_id AND is_hidden = 1)
BEGIN
    DELETE FROM user_items WHERE user_id = NEW.user_id AND seq = NEW.seq;
END;

-- What applying a rule once changed, so that it can be undone: each item's state before, the
-- labels it added and the arrival rows it removed (JSON). Kept a week.
CREATE TABLE rule_applications (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    rule_id     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    changes     TEXT    NOT NULL
);
CREATE INDEX rule_applications_user ON rule_applications (user_id, created_at);
