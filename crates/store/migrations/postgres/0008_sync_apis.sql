-- The sync APIs for apps (F70, F71).
--
-- Fever clients sign in with md5(username:key). The key itself is never stored (only its
-- SHA-256), so that digest cannot be derived later: it is stored beside the key when the key
-- is created. Keys are 256-bit random secrets, so the MD5 reveals nothing usable.
ALTER TABLE api_keys ADD COLUMN fever_hash TEXT;
CREATE UNIQUE INDEX api_keys_fever_hash ON api_keys (fever_hash) WHERE fever_hash IS NOT NULL;

-- Google Reader labels on items (`user/-/label/NAME` added with edit-tag): per user, by name,
-- so that a label is the same on items as on subscriptions (their group's name).
CREATE TABLE item_labels (
    user_id     BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id     BIGINT  NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    label       TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (user_id, item_id, label)
);
CREATE INDEX item_labels_by_label ON item_labels (user_id, label, item_id);
CREATE INDEX item_labels_item ON item_labels (item_id);
