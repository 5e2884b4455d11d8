-- Feed URL identity (F10): every feed's URL is normalized (no #fragment, no default port, the
-- host in lower case, no empty `?`, percent-escapes in one case), and feeds whose URLs are
-- spellings of one address are merged into one: subscriptions, items, read and starred states
-- move to the feed that remains. Normalizing needs a URL parser, so that work is the data step
-- `DataStep::NormalizeFeedUrls` (crates/store/src/migrate.rs), which runs in this migration's
-- transaction right after this statement.
SELECT 1;
