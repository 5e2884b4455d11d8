-- Version 27: second factors (issue 19): TOTP one-time codes, recovery codes and WebAuthn
-- passkeys, and the short-lived challenges of signing in with them.

-- A user's TOTP secret (RFC 6238). The server must read the secret to check codes, so it is
-- stored as it is; enrolment stays unconfirmed (and sign-in does not ask for a code) until a
-- first valid code proves the authenticator app has it.
CREATE TABLE totp_secrets (
    user_id       INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret        BLOB    NOT NULL,
    confirmed_at  INTEGER,
    -- The newest 30-second step whose code was accepted: a code of this step or an older one
    -- is refused, so an observed code cannot be replayed.
    last_step     INTEGER NOT NULL DEFAULT -1,
    created_at    INTEGER NOT NULL
);

-- Single-use recovery codes, as SHA-256 hashes (the codes are random, 50 bits each).
CREATE TABLE recovery_codes (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  TEXT    NOT NULL,
    used_at    INTEGER
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id, code_hash);

-- WebAuthn credentials: the public key (COSE_Key) and the signature counter.
CREATE TABLE passkeys (
    id             INTEGER PRIMARY KEY,
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id  TEXT    NOT NULL UNIQUE,   -- base64url, as the browser names it
    public_key     BLOB    NOT NULL,
    sign_count     INTEGER NOT NULL DEFAULT 0,
    name           TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    last_used_at   INTEGER
);
CREATE INDEX passkeys_user ON passkeys (user_id);

-- Short-lived sign-in state, in the database so that every replica sees it: a password
-- accepted and waiting for its second factor, or a WebAuthn challenge. Only a SHA-256 hash of
-- the token the browser holds is stored.
CREATE TABLE auth_challenges (
    token_hash  TEXT    PRIMARY KEY,
    purpose     TEXT    NOT NULL,
    user_id     INTEGER REFERENCES users (id) ON DELETE CASCADE,
    challenge   TEXT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX auth_challenges_expires ON auth_challenges (expires_at);
