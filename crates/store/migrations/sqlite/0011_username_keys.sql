-- User names are compared by a key, for uniqueness and sign-in: the name in NFKC, case folded
-- (issue 11), so that "josé" typed decomposed, "ＪＯＳÉ" in full-width letters and "JOSÉ" are
-- one name. `username` keeps the name as it was typed.
--
-- The keys of existing users are computed by tidings right after this SQL, in the same
-- transaction (the normalization is Unicode's, which SQL does not have on SQLite): see
-- `fill_username_keys` in crates/store/src/migrate.rs. Where two existing names share a key,
-- the older account (lower id) gets the key and the other `KEY#ID`, which no typed name can
-- produce; both still sign in with their exact names, which sign-in tries first.
ALTER TABLE users ADD COLUMN username_key TEXT;
CREATE UNIQUE INDEX users_by_username_key ON users (username_key);

-- Fever clients sign in with md5(username:key) computed from the name the user types: beside
-- the digest made with the name as stored, keys keep one made with the name's key.
ALTER TABLE api_keys ADD COLUMN fever_hash_folded TEXT;
CREATE UNIQUE INDEX api_keys_fever_hash_folded ON api_keys (fever_hash_folded)
    WHERE fever_hash_folded IS NOT NULL;
