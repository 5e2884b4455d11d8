-- Version 29: what each summary was made from. `source_chars` counts the characters of the
-- text the summarizer read (the feed's text, or the item's full article once it had one), so
-- that a summary of a teaser is made once more when a much longer article arrives. NULL for
-- summaries made before this version: their source is unknown, and they are kept as they are.
ALTER TABLE item_summaries ADD COLUMN source_chars BIGINT;
