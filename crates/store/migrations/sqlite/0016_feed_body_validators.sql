-- Raw feed bodies (F8) keep what reparsing needs to read a body exactly as its fetch did:
-- the URL that answered (after redirects; the base of relative links), the charset the server
-- declared, the validators sent with it, its uncompressed size (the storage cost), and whether
-- it parsed (a body that did not is kept too, so a parser fix reaches it, but an identical
-- copy of it is parsed again at the next fetch rather than skipped as unchanged).
ALTER TABLE feed_bodies ADD COLUMN source_url TEXT;
ALTER TABLE feed_bodies ADD COLUMN charset TEXT;
ALTER TABLE feed_bodies ADD COLUMN etag TEXT;
ALTER TABLE feed_bodies ADD COLUMN last_modified TEXT;
ALTER TABLE feed_bodies ADD COLUMN raw_size INTEGER;
ALTER TABLE feed_bodies ADD COLUMN parse_error TEXT;
