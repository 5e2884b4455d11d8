-- Duplicates across feeds (issue 35): the same story from several feeds, read once.
--
-- Whether two items are the same story does not depend on who reads them, so it is decided
-- once per arriving item (`tidings-cluster`) and kept on the items: `cluster_id` is the id of
-- the cluster's first item, the same for every copy; NULL for an item that has no copy.
-- Which copy a user is shown, and which copies they see at all, does depend on the user (the
-- feeds they follow, their rules, their per-feed choice): that is decided per subscriber as
-- the copy arrives, and kept in `user_duplicates`.
ALTER TABLE items ADD COLUMN cluster_id INTEGER;
CREATE INDEX items_cluster ON items (cluster_id) WHERE cluster_id IS NOT NULL;

-- The keys an arriving item finds its candidates by (canonical URLs, specific titles, text
-- anchors; `tidings_cluster::lookup_keys`): an equality look-up per key, however many items
-- are stored. Only items of the last weeks have keys (copies arrive within days); older keys
-- are dropped by retention, which keeps the table the size of a few weeks of items.
CREATE TABLE item_story_keys (
    key      INTEGER NOT NULL,
    item_id  INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    PRIMARY KEY (key, item_id)
) WITHOUT ROWID;
CREATE INDEX item_story_keys_item ON item_story_keys (item_id);

-- A copy a user is not shown in collapsed listings, and the copy shown in its place (the
-- first the user could see, or the copy from a feed they prefer). Marks on one copy reach the
-- others through `items.cluster_id`; these rows only say what a collapsed list leaves out and
-- what its counts do not count.
CREATE TABLE user_duplicates (
    user_id   INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id   INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    shown_id  INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, item_id)
) WITHOUT ROWID;
CREATE INDEX user_duplicates_item ON user_duplicates (item_id);
CREATE INDEX user_duplicates_shown ON user_duplicates (shown_id);

-- Per subscription: `merge` (the default), `prefer` (this feed's copy is the one shown) or
-- `never` (this feed's items are never merged with others, nor others with them).
ALTER TABLE subscriptions ADD COLUMN duplicates TEXT NOT NULL DEFAULT 'merge'
    CHECK (duplicates IN ('merge', 'prefer', 'never'));

-- Per user: whether a listing shows a cluster once (on by default), and whether reading one
-- copy marks the others (`cluster`, the default) or only that copy (`copy`).
ALTER TABLE user_preferences ADD COLUMN collapse_duplicates INTEGER NOT NULL DEFAULT 1
    CHECK (collapse_duplicates IN (0, 1));
ALTER TABLE user_preferences ADD COLUMN duplicates_read TEXT NOT NULL DEFAULT 'cluster'
    CHECK (duplicates_read IN ('cluster', 'copy'));
