-- Version 57 replaces SQLite's by-label index of item_labels with a table of each user's
-- label names and counts (issue 33): on SQLite that index's entry dirtied a leaf per user and
-- label of each fetch, each written whole into the WAL at commit. PostgreSQL writes a page
-- whole only at its first change after a checkpoint, and dropping the index there measured
-- nothing within the bench's noise; its label list still reads item_labels_by_label.
SELECT 1;
