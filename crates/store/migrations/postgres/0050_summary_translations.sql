-- Summaries in the reader's language (issue 37): an item's generated summary (stored once per
-- item, in the article's language) translated by the translation provider into another
-- language, kept per item and target language like item_translations and shared by every
-- reader. summary_created_at is the created_at of the summary it translates: a summary made
-- again (from the full article) makes the translation stale, and it is made again when asked.
CREATE TABLE summary_translations (
    item_id             BIGINT  NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    language            TEXT    NOT NULL,
    text                TEXT    NOT NULL,
    source_language     TEXT,
    provider            TEXT    NOT NULL,
    model               TEXT,
    summary_created_at  BIGINT  NOT NULL,
    created_at          BIGINT  NOT NULL,
    PRIMARY KEY (item_id, language)
);
