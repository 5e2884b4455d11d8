-- The fetch worker's periodic jobs and retention (F17).

-- One row per periodic job (retention, orphan collection): which worker started it last and
-- when. Claiming a run is a single conditional upsert, so several worker processes sharing the
-- database start a daily job once a day between them.
CREATE TABLE job_runs (
    name         TEXT    PRIMARY KEY,
    owner        TEXT    NOT NULL,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    outcome      TEXT
);

-- Orphan collection looks up feeds by the time their last subscriber left.
CREATE INDEX feeds_orphaned ON feeds (orphaned_at) WHERE orphaned_at IS NOT NULL;
