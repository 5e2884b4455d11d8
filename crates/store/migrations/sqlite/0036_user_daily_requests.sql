-- Per-user daily budgets of requests to remote providers (issue 31): one user could spend the
-- whole installation's daily summary budget alone. Each row counts what one user's items cost
-- one kind of provider (`summary`, `embedding`) on one UTC day (days since the epoch); the
-- installation's own count stays in `summary_requests`. Rows of past days are deleted as new
-- days begin.
CREATE TABLE user_daily_requests (
    day       INTEGER  NOT NULL,
    user_id   INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind      TEXT    NOT NULL CHECK (kind IN ('summary', 'embedding')),
    requests  INTEGER  NOT NULL,
    PRIMARY KEY (day, user_id, kind)
);
