-- Rate limits shared by every API replica on this database (F25): one fixed window per
-- limit and key. A SQLite installation is one process, whose server counts in memory; the
-- table keeps the two schemas alike, so that the store's counting works on both engines.
CREATE TABLE rate_limit_windows (
    scope      TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    -- When the window ends, in Unix milliseconds of the database's clock.
    window_end INTEGER NOT NULL,
    hits       INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX rate_limit_windows_end ON rate_limit_windows (window_end);
