-- Translations (issue 37): an item's title and text in another language, made by the provider
-- the operator chose (LibreTranslate, DeepL, an OpenAI-compatible or an Anthropic model) and
-- kept per item and target language (a BCP 47 tag), so that an item is translated into one
-- language once, whoever asks. The content is sanitized HTML, sanitized again after the
-- provider answered.
CREATE TABLE item_translations (
    item_id          INTEGER  NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    language         TEXT    NOT NULL,
    title            TEXT,
    content          TEXT,
    source_language  TEXT,
    provider         TEXT    NOT NULL,
    model            TEXT,
    created_at       INTEGER  NOT NULL,
    PRIMARY KEY (item_id, language)
);

-- Items waiting to be translated into a language in the background (subscriptions marked
-- "always translate"), claimed with a lease like the other enrichment queues. A row given up
-- stays, never due, so that the item is not queued again.
CREATE TABLE translation_jobs (
    item_id      INTEGER  NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    language     TEXT    NOT NULL,
    queued_at    INTEGER  NOT NULL,
    not_before   INTEGER  NOT NULL,
    attempts     INTEGER  NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    lease_until  INTEGER,
    last_error   TEXT,
    PRIMARY KEY (item_id, language)
);
CREATE INDEX translation_jobs_due ON translation_jobs (not_before);

-- Requests made to the translation provider per UTC day (days since the epoch), for the
-- installation's daily budget, counted in the database like summary_requests.
CREATE TABLE translation_requests (
    day       INTEGER  NOT NULL,
    provider  TEXT    NOT NULL,
    requests  INTEGER  NOT NULL,
    PRIMARY KEY (day, provider)
);

-- Subscriptions whose new items are translated into a language in the background, from
-- `since` (Unix seconds: when it was turned on) so that turning it on does not translate the
-- feed's whole past.
CREATE TABLE subscription_translations (
    subscription_id  INTEGER  PRIMARY KEY REFERENCES subscriptions (id) ON DELETE CASCADE,
    language         TEXT    NOT NULL,
    since            INTEGER  NOT NULL
);

-- Per-user daily budgets count translation requests too: SQLite cannot change a CHECK, so the
-- table is built again with the new kind.
CREATE TABLE user_daily_requests_new (
    day       INTEGER  NOT NULL,
    user_id   INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind      TEXT    NOT NULL CHECK (kind IN ('summary', 'embedding', 'translation')),
    requests  INTEGER  NOT NULL,
    PRIMARY KEY (day, user_id, kind)
);
INSERT INTO user_daily_requests_new (day, user_id, kind, requests)
SELECT day, user_id, kind, requests FROM user_daily_requests;
DROP TABLE user_daily_requests;
ALTER TABLE user_daily_requests_new RENAME TO user_daily_requests;
