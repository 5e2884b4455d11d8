-- Version 14: full text (F6). Each subscription says whether its items' article pages are
-- fetched: 'auto' when the feed's text is short, 'always', or 'never'. A feed's items are
-- fetched for the strongest mode among its subscribers.
ALTER TABLE subscriptions ADD COLUMN full_text TEXT NOT NULL DEFAULT 'auto'
    CHECK (full_text IN ('auto', 'always', 'never'));

-- The article extracted from an item's page, kept apart from the feed's content so that the
-- reader can switch between the two. One row per item tried: `content` is NULL when nothing
-- was kept (the page failed, had no article, or had less text than the feed), and `outcome`
-- says which, so that an item is not fetched again by the worker.
CREATE TABLE item_full_texts (
    item_id     INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    content     TEXT,
    text_chars  INTEGER NOT NULL DEFAULT 0,
    source_url  TEXT,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('extracted', 'shorter', 'failed')),
    error       TEXT,
    fetched_at  INTEGER NOT NULL
);

-- Items waiting for their article page: the full-text worker's queue, apart from the feeds'
-- schedule so that it never delays a feed's fetch. Claimed with a lease, like feeds.
CREATE TABLE full_text_jobs (
    item_id      INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    queued_at    INTEGER NOT NULL,
    not_before   INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    lease_until  INTEGER,
    last_error   TEXT
);
CREATE INDEX full_text_jobs_due ON full_text_jobs (not_before, item_id);
