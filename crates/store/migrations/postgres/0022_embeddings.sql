-- Version 22: related items (F44). Each item's vector from the configured embedder (a
-- provider's model, or the local hashed term vectors), stored portably: one signed byte per
-- dimension, and a 256-bit sign code (SimHash) that the server keeps in memory to find
-- candidates, so that neither engine needs a vector extension.
CREATE TABLE item_embeddings (
    item_id      BIGINT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    -- What made the vector; vectors of different models are never compared.
    model        TEXT NOT NULL CHECK (model <> ''),
    vector       BYTEA NOT NULL,
    code         BYTEA NOT NULL,
    -- The order rows were written in (embedding_state.last_seq), so that a server's index
    -- reads on from the last row it saw.
    seq          BIGINT NOT NULL,
    embedded_at  BIGINT NOT NULL
);
CREATE INDEX item_embeddings_seq ON item_embeddings (seq);

-- Items to embed, claimed with a lease; a failed batch waits until not_before, and an item
-- that failed too often is dropped.
CREATE TABLE embedding_jobs (
    item_id      BIGINT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    queued_at    BIGINT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    not_before   BIGINT NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    lease_until  BIGINT
);
CREATE INDEX embedding_jobs_due ON embedding_jobs (not_before);

-- Where queueing got to, for the model the worker embeds with. New items (ids at or above
-- next_item_id) are queued first; older ones are queued newest first, from backfill_item_id
-- down, so that a new install or a new model embeds recent items first and the migration
-- itself is instant. A worker with another model starts both cursors again.
CREATE TABLE embedding_state (
    id                BIGINT PRIMARY KEY CHECK (id = 1),
    model             TEXT,
    next_item_id      BIGINT NOT NULL,
    backfill_item_id  BIGINT NOT NULL,
    -- The last item_embeddings.seq given out; the writer that takes the next ones holds this
    -- row until it commits, so rows become visible in seq order.
    last_seq          BIGINT NOT NULL DEFAULT 0
);
INSERT INTO embedding_state (id, model, next_item_id, backfill_item_id)
SELECT 1, NULL, COALESCE(MAX(id), 0) + 1, COALESCE(MAX(id), 0) FROM items;
