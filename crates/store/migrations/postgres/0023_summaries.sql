-- Version 23: summaries (F42). Each item is summarized at most once, by the provider
-- configured then (`local`, `openai` or `anthropic`), and the summary is kept: it is never
-- computed again, whoever asks.
CREATE TABLE item_summaries (
    item_id     BIGINT  PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    text        TEXT    NOT NULL,
    provider    TEXT    NOT NULL,
    model       TEXT,
    created_at  BIGINT  NOT NULL
);

-- Items waiting for their summary: the summary worker's queue, apart from the feeds' schedule
-- so that a slow or failing provider never delays a fetch. Claimed with a lease (see
-- job_queue.rs), like full_text_jobs.
CREATE TABLE summary_jobs (
    item_id      BIGINT  PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    queued_at    BIGINT  NOT NULL,
    not_before   BIGINT  NOT NULL,
    attempts     BIGINT  NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    lease_until  BIGINT,
    last_error   TEXT
);
CREATE INDEX summary_jobs_due ON summary_jobs (not_before, item_id);

-- Requests made to a remote provider per UTC day (days since the epoch), counted in the
-- database so that the daily budget holds however many processes summarize.
CREATE TABLE summary_requests (
    day       BIGINT  NOT NULL,
    provider  TEXT    NOT NULL,
    requests  BIGINT  NOT NULL,
    PRIMARY KEY (day, provider)
);

-- Which new items a user wants summarized: none until asked ('on_demand', the default), all
-- of them ('all'), or those of the subscriptions marked for it ('chosen').
ALTER TABLE user_preferences ADD COLUMN summarize TEXT NOT NULL DEFAULT 'on_demand'
    CHECK (summarize IN ('on_demand', 'all', 'chosen'));
ALTER TABLE subscriptions ADD COLUMN summarize BOOLEAN NOT NULL DEFAULT FALSE;
