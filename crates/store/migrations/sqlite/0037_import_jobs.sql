-- Imports run as background jobs (issue 32): an upload answers at once with its job, whose row
-- the import updates as it goes (counters, a heartbeat in updated_at) and finishes with its
-- per-entry report. `kind` names what is imported ('opml'; imports from other readers add
-- theirs) and is not constrained here, so that a new kind needs no migration; `entries` is the
-- kind's per-entry report as a JSON array, `summary` a JSON object of the kind's own totals.
-- A job whose process went away stops beating and is marked 'interrupted'.
CREATE TABLE import_jobs (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind         TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
    source       TEXT,
    total        INTEGER NOT NULL DEFAULT 0,
    checked      INTEGER NOT NULL DEFAULT 0,
    added        INTEGER NOT NULL DEFAULT 0,
    skipped      INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    entries      TEXT    NOT NULL DEFAULT '[]',
    summary      TEXT,
    error        TEXT,
    owner        TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX import_jobs_user ON import_jobs (user_id, created_at DESC);
CREATE INDEX import_jobs_running ON import_jobs (updated_at) WHERE status = 'running';

-- The OPML import history becomes the finished 'opml' jobs, keeping its ids.
INSERT INTO import_jobs (id, user_id, kind, status, source, total, checked, added, skipped,
                         failed, entries, created_at, updated_at, finished_at)
SELECT id, user_id, 'opml', 'done', file_name, outlines, outlines, added, skipped, failed,
       report, created_at, created_at, created_at
FROM opml_imports;
DROP TABLE opml_imports;
