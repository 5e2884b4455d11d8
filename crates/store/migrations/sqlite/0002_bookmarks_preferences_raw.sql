-- Bookmarks, preferences, OPML import history, raw feed bodies and favicons.

-- Bookmarks (F34): a snapshot that survives the item's and the feed's deletion.
CREATE TABLE bookmarks (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id       INTEGER REFERENCES items (id) ON DELETE SET NULL,
    url           TEXT,
    title         TEXT,
    content       TEXT,
    feed_title    TEXT,
    published_at  INTEGER,
    created_at    INTEGER NOT NULL
);
CREATE INDEX bookmarks_user ON bookmarks (user_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX bookmarks_user_item ON bookmarks (user_id, item_id) WHERE item_id IS NOT NULL;
CREATE INDEX bookmarks_item ON bookmarks (item_id);

-- User preferences (F38).
CREATE TABLE user_preferences (
    user_id            INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    theme              TEXT    NOT NULL DEFAULT 'auto' CHECK (theme IN ('light', 'dark', 'auto')),
    page_size          INTEGER NOT NULL DEFAULT 50 CHECK (page_size BETWEEN 10 AND 200),
    show_images        INTEGER NOT NULL DEFAULT 1 CHECK (show_images IN (0, 1)),
    mark_read_on_open  INTEGER NOT NULL DEFAULT 1 CHECK (mark_read_on_open IN (0, 1)),
    default_view       TEXT    NOT NULL DEFAULT 'unread' CHECK (default_view IN ('all', 'unread', 'starred')),
    updated_at         INTEGER NOT NULL
);

-- OPML import history (F37), with the per-URL report as JSON.
CREATE TABLE opml_imports (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    file_name   TEXT,
    outlines    INTEGER NOT NULL,
    added       INTEGER NOT NULL,
    skipped     INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    report      TEXT    NOT NULL DEFAULT '[]'
);
CREATE INDEX opml_imports_user ON opml_imports (user_id, created_at DESC);

-- The latest raw body of each feed, compressed, so items can be re-derived (F8).
CREATE TABLE feed_bodies (
    feed_id       INTEGER PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
    fetched_at    INTEGER NOT NULL,
    content_type  TEXT,
    body_sha256   TEXT    NOT NULL,           -- an identical body skips parsing
    compression   TEXT    NOT NULL,
    body          BLOB    NOT NULL
);

-- Favicons (F3): bytes and MIME type, refreshed monthly.
CREATE TABLE favicons (
    feed_id     INTEGER PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
    mime_type   TEXT,
    data        BLOB,                         -- NULL when the last attempt found none
    source_url  TEXT,
    fetched_at  INTEGER NOT NULL
);
