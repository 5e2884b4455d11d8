-- Fever clients sign in with md5(username:key), and until now that digest was stored as it is:
-- anyone who read the table (a backup, a leaked dump) could sign in with it as any Fever app
-- does. From here on only SHA-256 of the digest is stored (issue 31), as API keys themselves
-- are; sign-in hashes what the client sends and looks that up.
--
-- The existing digests are hashed by tidings right after this SQL, in the same transaction
-- (SQLite has no SHA-256): see `hash_fever_digests` in crates/store/src/migrate.rs. It only
-- touches rows that still hold an md5 digest and clears it as it goes, so a run interrupted
-- and started again picks up where it stopped. Migration 34 then drops the old columns.
ALTER TABLE api_keys ADD COLUMN fever_digest_sha256 TEXT;
ALTER TABLE api_keys ADD COLUMN fever_digest_sha256_folded TEXT;
CREATE UNIQUE INDEX api_keys_fever_digest_sha256 ON api_keys (fever_digest_sha256)
    WHERE fever_digest_sha256 IS NOT NULL;
CREATE UNIQUE INDEX api_keys_fever_digest_sha256_folded ON api_keys (fever_digest_sha256_folded)
    WHERE fever_digest_sha256_folded IS NOT NULL;
