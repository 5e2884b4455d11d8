-- The md5 Fever digests, hashed into `fever_digest_sha256(_folded)` by migration 33, go: a
-- column that once held a sign-in secret should not linger, even empty.
DROP INDEX api_keys_fever_hash;
DROP INDEX api_keys_fever_hash_folded;
ALTER TABLE api_keys DROP COLUMN fever_hash;
ALTER TABLE api_keys DROP COLUMN fever_hash_folded;
