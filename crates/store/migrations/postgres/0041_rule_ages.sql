-- Rules with an age ("older than N days") act on items as they reach that age, not only as
-- they arrive: a periodic pass looks at the items whose age crossed the rule's bound since its
-- last pass. `aged_through` is that bound (a publication time, in seconds): items published
-- up to it have been looked at. NULL: not yet, and the pass starts from the rule's last change
-- (a saved rule acts on what comes afterwards; what is there changes only through "apply").
ALTER TABLE rules ADD COLUMN aged_through BIGINT;
