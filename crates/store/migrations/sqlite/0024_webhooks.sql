-- Version 24: notifications of new items to webhooks (F43). A user's channels (Discord,
-- Slack, generic JSON) with their rules, the queue of items waiting for each channel, the
-- delivery log the user sees, and the cursor of the matcher that queues new items.

-- A channel. `rules` is JSON {"feed_ids": [], "group_ids": [], "keywords": []} (no rule: every
-- new item of the user's subscriptions). Items whose id is above `after_item_id` are new to
-- it (the largest item id when it was created), so a channel never gets the past.
-- The delivery state is the worker's: `failures` in a row, `next_send_ms` (Unix ms) before
-- which nothing is sent (the pace, a retry's back-off, a 429's wait, an open breaker),
-- `breaker_until_ms` while the breaker is open, and a lease while a message is in flight.
CREATE TABLE webhooks (
    id                INTEGER PRIMARY KEY,
    user_id           INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind              TEXT    NOT NULL CHECK (kind IN ('discord', 'slack', 'generic')),
    name              TEXT    NOT NULL CHECK (name <> ''),
    url               TEXT    NOT NULL,
    rules             TEXT    NOT NULL DEFAULT '{}',
    enabled           INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    after_item_id     INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    failures          INTEGER NOT NULL DEFAULT 0,
    next_send_ms      INTEGER NOT NULL DEFAULT 0,
    breaker_until_ms  INTEGER,
    last_sent_at      INTEGER,
    lease_owner       TEXT,
    lease_until       INTEGER
);
CREATE INDEX webhooks_user ON webhooks (user_id);

-- Items waiting for a channel; a sent (or dropped) item leaves. `attempts` counts the failed
-- messages it was in. Deleting the item or the channel drops its rows.
CREATE TABLE webhook_queue (
    webhook_id  INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    queued_at   INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (webhook_id, item_id)
);
CREATE INDEX webhook_queue_item ON webhook_queue (item_id);

-- The delivery log: one row per message (or test, or drop), the newest 100 per channel kept.
CREATE TABLE webhook_deliveries (
    id           INTEGER PRIMARY KEY,
    webhook_id   INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    at           INTEGER NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('sent', 'retrying', 'dropped', 'failed')),
    is_test      INTEGER NOT NULL DEFAULT 0 CHECK (is_test IN (0, 1)),
    http_status  INTEGER,
    items        INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    duration_ms  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);

-- The matcher's cursor: items below next_item_id were matched against the channels. It
-- starts after the items stored before this migration, which are not news.
CREATE TABLE webhook_matcher (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    next_item_id  INTEGER NOT NULL,
    lease_owner   TEXT,
    lease_until   INTEGER
);
INSERT INTO webhook_matcher (id, next_item_id) SELECT 1, COALESCE(MAX(id), 0) + 1 FROM items;
