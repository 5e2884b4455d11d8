-- A per-site daily budget of article pages that full text's `auto` mode fetches in the
-- background (issue 38): an import of 413 feeds once fetched 47,807 pages, most from a few
-- hosts. Each row counts the pages asked of one host on one UTC day (days since the epoch);
-- the first page of a new day deletes the rows of earlier days.
CREATE TABLE full_text_host_pages (
    day   BIGINT  NOT NULL,
    host  TEXT    NOT NULL,
    pages BIGINT  NOT NULL,
    PRIMARY KEY (day, host)
);
