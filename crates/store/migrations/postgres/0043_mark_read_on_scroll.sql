-- Marking items read as the reader scrolls past them (issue 34): off by default, as a list
-- skimmed is not a list read.
ALTER TABLE user_preferences ADD COLUMN mark_read_on_scroll BOOLEAN NOT NULL DEFAULT FALSE;
