-- Version 28: OpenID Connect sign-in (F22). The `identities` table of version 1 holds the
-- linked identities (provider = the issuer URL, subject = the ID token's `sub`); this adds
-- when each was last used, and the sign-ins in flight.
ALTER TABLE identities ADD COLUMN last_used_at INTEGER;

-- One row per authorization request sent to the provider, until its answer comes back:
-- found by the hash of its `state`, deleted when used (so a replayed answer finds nothing)
-- and refused after `expires_at`. `link_user_id` is set when a signed-in user links an
-- identity to their account rather than signing in.
CREATE TABLE oidc_logins (
    state_hash     TEXT    PRIMARY KEY,
    nonce          TEXT    NOT NULL,
    code_verifier  TEXT    NOT NULL,
    link_user_id   INTEGER REFERENCES users (id) ON DELETE CASCADE,
    return_to      TEXT,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL
);
-- Abandoned requests are pruned by their expiry.
CREATE INDEX oidc_logins_expires ON oidc_logins (expires_at);
