-- Usage counts without personal data (F45): how often something was used on a UTC day, and
-- nothing more. There is no user, address, session, device or time of day here: a row says
-- only that on this day this item's original link was opened, this tag's page was viewed or
-- this search was made `count` times, by whoever it was.
CREATE TABLE usage_counts (
    -- Days since 1970-01-01, in UTC.
    day   INTEGER NOT NULL,
    -- 'click': an item's original link opened (key: the item's id); 'tag_view': a tag's page
    -- viewed (key: the tag's name); 'search': a search made (key: the query, normalized).
    kind  TEXT    NOT NULL CHECK (kind IN ('click', 'tag_view', 'search')),
    key   TEXT    NOT NULL,
    count INTEGER NOT NULL CHECK (count > 0),
    -- Counting is one upsert on this key; pruning and the daily top lists read its prefix.
    PRIMARY KEY (day, kind, key)
);
