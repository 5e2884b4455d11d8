-- Retention (F17) by the age of an item in tidings, never by its date in the feed, and without
-- deleted items coming back.
--
-- An item retention deletes leaves a tombstone: its feed and identity key. A fetch does not
-- insert an identity its feed has a tombstone for, so a deleted item that the feed still lists
-- does not come back as a new unread item. Each fetch that lists the identity again refreshes
-- last_seen_at; tombstones the feed has not listed for a while are removed at its next parse,
-- so a feed never holds more tombstones than identities it listed lately, and they go with
-- the feed.
CREATE TABLE item_tombstones (
    feed_id       BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    identity_key  TEXT   NOT NULL,
    deleted_at    BIGINT NOT NULL,
    last_seen_at  BIGINT NOT NULL,            -- the last parse of the feed that listed it
    PRIMARY KEY (feed_id, identity_key)
);
