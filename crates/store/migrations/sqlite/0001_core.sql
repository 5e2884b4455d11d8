-- Core schema: accounts, groups, shared feeds and their fetch state, subscriptions, items and
-- per-user item state. Times are Unix seconds (UTC) in INTEGER columns on both engines.

CREATE TABLE users (
    id              INTEGER PRIMARY KEY,
    username        TEXT    NOT NULL UNIQUE,
    password_hash   TEXT,                      -- NULL for accounts that only sign in through OIDC
    is_admin        INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
    is_disabled     INTEGER NOT NULL DEFAULT 0 CHECK (is_disabled IN (0, 1)),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_login_at   INTEGER
);

-- External identities (F22): several per user, one user per (provider, subject).
CREATE TABLE identities (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider    TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    email       TEXT,
    created_at  INTEGER NOT NULL,
    UNIQUE (provider, subject)
);
CREATE INDEX identities_user ON identities (user_id);

-- Server-side sessions (F21); only a hash of the cookie's token is stored.
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash    TEXT    NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,           -- absolute expiry; idle expiry is last_seen_at + idle
    user_agent    TEXT,
    ip            TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- API keys (F23): shown once, stored hashed.
CREATE TABLE api_keys (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    key_prefix    TEXT    NOT NULL,           -- the first characters, to tell keys apart in lists
    key_hash      TEXT    NOT NULL UNIQUE,
    scope         TEXT    NOT NULL CHECK (scope IN ('read', 'read_write')),
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    last_used_at  INTEGER,
    revoked_at    INTEGER
);
CREATE INDEX api_keys_user ON api_keys (user_id);

-- Groups (F33): every user has exactly one default group, created with the user.
CREATE TABLE feed_groups (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    position    INTEGER NOT NULL DEFAULT 0,
    is_default  INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    created_at  INTEGER NOT NULL,
    UNIQUE (user_id, name)
);
CREATE UNIQUE INDEX feed_groups_one_default ON feed_groups (user_id) WHERE is_default = 1;

-- Feeds are shared: one row per feed URL whoever follows it (F10).
CREATE TABLE feeds (
    id           INTEGER PRIMARY KEY,
    url          TEXT    NOT NULL UNIQUE,
    title        TEXT,
    site_url     TEXT,
    description  TEXT,
    format       TEXT,                        -- rss, atom or json once parsed
    icon_url     TEXT,
    websub_hub   TEXT,                        -- F18
    suspended    INTEGER NOT NULL DEFAULT 0 CHECK (suspended IN (0, 1)),  -- F16
    proxy_url    TEXT,                        -- F16
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    orphaned_at  INTEGER                      -- when its last subscriber left (F17)
);

-- What the scheduler knows about a feed (F12, F14), one row per feed.
CREATE TABLE feed_fetch_state (
    feed_id               INTEGER PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
    status                TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'backoff', 'stopped')),
    status_reason         TEXT,
    etag                  TEXT,
    last_modified         TEXT,
    cache_control         TEXT,
    expires_at            INTEGER,
    retry_after_until     INTEGER,
    next_check_at         INTEGER NOT NULL DEFAULT 0,
    last_checked_at       INTEGER,
    last_success_at       INTEGER,
    last_error_at         INTEGER,
    last_error            TEXT,
    last_http_status      INTEGER,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    parse_failures        INTEGER NOT NULL DEFAULT 0,
    last_refresh_request  INTEGER,            -- manual refresh, at most once a minute (F15)
    lease_owner           TEXT,               -- the worker holding the feed (F11)
    lease_until           INTEGER
);
CREATE INDEX feed_fetch_state_due ON feed_fetch_state (next_check_at) WHERE status <> 'stopped';

-- A user's subscription to a shared feed, with its own title, group and interval (F10, F33).
CREATE TABLE subscriptions (
    id                      INTEGER PRIMARY KEY,
    user_id                 INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    feed_id                 INTEGER NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    group_id                INTEGER NOT NULL REFERENCES feed_groups (id),
    title                   TEXT,
    fetch_interval_minutes  INTEGER NOT NULL DEFAULT 60
        CHECK (fetch_interval_minutes BETWEEN 30 AND 720 AND fetch_interval_minutes % 30 = 0),
    created_at              INTEGER NOT NULL,
    UNIQUE (user_id, feed_id)
);
CREATE INDEX subscriptions_feed ON subscriptions (feed_id);
CREATE INDEX subscriptions_group ON subscriptions (group_id);

-- Items belong to a feed and are shared by its subscribers (F4: unique identity per feed).
CREATE TABLE items (
    id                 INTEGER PRIMARY KEY,
    feed_id            INTEGER NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    identity_key       TEXT    NOT NULL,
    guid               TEXT,
    url                TEXT,
    title              TEXT,
    author             TEXT,
    content            TEXT,
    summary            TEXT,
    published_at       INTEGER NOT NULL,     -- the fetch time when the feed gave none
    is_date_estimated  INTEGER NOT NULL DEFAULT 0 CHECK (is_date_estimated IN (0, 1)),
    updated_at         INTEGER,              -- the item's own "updated" date
    fetched_at         INTEGER NOT NULL,     -- first seen
    changed_at         INTEGER NOT NULL,     -- last stored change
    content_hash       TEXT    NOT NULL,
    enclosures         TEXT    NOT NULL DEFAULT '[]',  -- JSON array of {url, mime_type, length}
    categories         TEXT    NOT NULL DEFAULT '[]',  -- JSON array of strings
    UNIQUE (feed_id, identity_key)
);
CREATE INDEX items_feed_published ON items (feed_id, published_at DESC, id DESC);
CREATE INDEX items_published ON items (published_at DESC, id DESC);

-- Per-user state of an item (F32). No row means unread and not starred.
CREATE TABLE item_states (
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    is_read     INTEGER NOT NULL DEFAULT 0 CHECK (is_read IN (0, 1)),
    is_starred  INTEGER NOT NULL DEFAULT 0 CHECK (is_starred IN (0, 1)),
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, item_id)
);
CREATE INDEX item_states_item ON item_states (item_id);
CREATE INDEX item_states_starred ON item_states (user_id, item_id) WHERE is_starred = 1;

-- Installation-wide settings, such as the hash of the one-time first-admin setup token.
CREATE TABLE system_settings (
    key         TEXT PRIMARY KEY,
    value       TEXT    NOT NULL,
    updated_at  INTEGER NOT NULL
);
