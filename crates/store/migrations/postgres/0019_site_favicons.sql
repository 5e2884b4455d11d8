-- Favicons shared per site through the store (issue 14): one lookup serves every feed of a
-- site, in every process. A worker claims a site (claimed_until) before looking it up, so
-- that two processes do not both ask; the others wait for its result or reuse it while it is
-- fresh. site_key is the worker's lookup key: the icon URL a feed names, else its site's
-- origin. fetched_at is 0 until the first lookup ends.
CREATE TABLE site_favicons (
    site_key       TEXT    PRIMARY KEY,
    mime_type      TEXT,
    data           BYTEA,                          -- NULL when the last lookup found none
    source_url     TEXT,
    fetched_at     BIGINT  NOT NULL,
    claimed_until  BIGINT  NOT NULL
);
