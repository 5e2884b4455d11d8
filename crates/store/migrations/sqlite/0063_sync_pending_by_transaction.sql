-- Version 63 has PostgreSQL find a transaction's pending items by the transaction, where a
-- table of them gathered dead rows between vacuums. SQLite numbers new items as it writes
-- them, with no such table: nothing to change.
SELECT 1;
