-- Rate limits shared by every API replica on this database (F25): one fixed window per
-- limit and key (a user, an address, an account name). UNLOGGED because the counts are
-- short-lived and cheap to lose: no WAL is written for them, and a crash merely resets the
-- current minute's counts.
CREATE UNLOGGED TABLE rate_limit_windows (
    scope      TEXT   NOT NULL,
    key        TEXT   NOT NULL,
    -- When the window ends, in Unix milliseconds of the database's clock.
    window_end BIGINT NOT NULL,
    hits       BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
-- Expired windows are pruned by their end.
CREATE INDEX rate_limit_windows_end ON rate_limit_windows (window_end);
