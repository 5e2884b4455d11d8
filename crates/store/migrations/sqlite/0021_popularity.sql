-- Version 21: popularity (F40). How many people bookmarked an item's link at a count source
-- (Hatena Bookmark), as last fetched. No row means "not yet known", which is not 0.
CREATE TABLE item_popularity (
    item_id     INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    count       INTEGER NOT NULL CHECK (count >= 0),
    fetched_at  INTEGER NOT NULL
);
-- The worker refreshes the oldest counts first.
CREATE INDEX item_popularity_fetched ON item_popularity (fetched_at, item_id);

-- One row per count source: its pace, shared by every worker so that the spacing between
-- calls, the calls per cycle and the back-off hold for the installation, not per process.
-- Times in milliseconds, so that spacing below a second can be tested.
CREATE TABLE popularity_sources (
    source            TEXT    PRIMARY KEY,
    not_before_ms     INTEGER NOT NULL DEFAULT 0,   -- the next call's earliest start
    cycle_started_ms  INTEGER NOT NULL DEFAULT 0,
    cycle_calls       INTEGER NOT NULL DEFAULT 0,
    failures          INTEGER NOT NULL DEFAULT 0,   -- consecutive failed calls
    lease_owner       TEXT,                         -- the worker whose call is in flight
    lease_until_ms    INTEGER,
    last_error        TEXT
);
