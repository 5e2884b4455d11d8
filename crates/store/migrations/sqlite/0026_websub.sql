-- Version 26: WebSub (F18). One row per feed whose fetch found a hub: what the feed advertises
-- now, and the one subscription tidings holds (or asked for) at a hub for the feed, whoever
-- follows it. Times are Unix seconds.
CREATE TABLE websub_subscriptions (
    feed_id         INTEGER  PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
    -- As the last parse found them; NULL once the feed stops advertising a hub.
    hub_url         TEXT,
    topic_url       TEXT,
    discovered_at   INTEGER  NOT NULL,
    -- The subscription as last requested: the hub and topic asked for (they lag the advertised
    -- ones until the next request), the callback's unguessable token and the HMAC secret.
    sub_hub_url     TEXT,
    sub_topic_url   TEXT,
    callback_token  TEXT    NOT NULL UNIQUE,
    secret          TEXT    NOT NULL,
    -- What the hub holds as far as tidings knows, and the request awaiting the hub's
    -- verification of intent, if any.
    state           TEXT    NOT NULL DEFAULT 'inactive' CHECK (state IN ('inactive', 'active', 'denied')),
    pending_mode    TEXT    CHECK (pending_mode IN ('subscribe', 'unsubscribe')),
    requested_at    INTEGER,
    lease_seconds   INTEGER,
    active_until    INTEGER,
    denied_reason   TEXT,
    last_error      TEXT,
    failures        INTEGER  NOT NULL DEFAULT 0,     -- consecutive failed requests
    -- When the subscriber job looks at the row next (renewal, retry), and its claim.
    next_action_at  INTEGER  NOT NULL DEFAULT 0,
    lease_owner     TEXT,
    lease_until     INTEGER,
    -- Content distributions accepted (signature valid) and rejected.
    pushes          INTEGER  NOT NULL DEFAULT 0,
    last_push_at    INTEGER,
    rejected_pushes INTEGER  NOT NULL DEFAULT 0
);
CREATE INDEX websub_subscriptions_due ON websub_subscriptions (next_action_at);
