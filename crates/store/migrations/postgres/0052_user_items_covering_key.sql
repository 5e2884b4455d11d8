-- The call sync apps make most, a page of ids in arrival order (Google Reader's
-- `stream/items/ids`, 1,000 at a time), reads a user's arrival rows by their key (user, seq)
-- and needs each row's arrival time and item too: held in the key's index, the page is read
-- from the index alone, without visiting 1,000 rows of the table (about half of the backend's
-- time for the page, measured with 20 users of 48,000 items each). Rebuilding the key takes
-- the table's lock for as long as the index builds: seconds for a million arrival rows.
ALTER TABLE user_items
    DROP CONSTRAINT user_items_pkey,
    ADD CONSTRAINT user_items_pkey PRIMARY KEY (user_id, seq) INCLUDE (arrived_us, item_id);

-- An index-only read still visits a row whose page the visibility map does not mark all
-- visible, which only VACUUM does; arrival rows are only ever added, so autovacuum's default
-- (after a fifth of the table again is new) leaves the newest rows, the ones apps ask for,
-- unmarked for long. A hundredth keeps the map close behind: VACUUM on an insert-only table
-- reads the new pages alone.
ALTER TABLE user_items SET (
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_vacuum_insert_threshold = 10000
);
