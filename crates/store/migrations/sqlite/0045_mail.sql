-- Version 45: newsletters by email (issue 36).

-- A user's receiving addresses: <token>@<TIDINGS_MAIL_DOMAIN>, or <token>+<label>@… . The
-- token alone finds the address (any label after a + reaches it, as plus-addressing does
-- elsewhere). A revoked address keeps its row, so that its token is never given out again
-- and mail to it is refused.
CREATE TABLE mail_addresses (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token       TEXT NOT NULL UNIQUE CHECK (token <> ''),
    label       TEXT,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX mail_addresses_user ON mail_addresses (user_id);

-- The feed of one sender's mail to one user: mail is not shared between users (a newsletter
-- greets its reader by name and carries links personal to them), so each user's feed of a
-- sender is a feed of its own, found by the sender's key (the List-Id, else the From
-- address, lower-cased). Its URL is mailto:; the worker never fetches it.
CREATE TABLE mail_feeds (
    feed_id     INTEGER PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sender_key  TEXT NOT NULL,
    UNIQUE (user_id, sender_key)
);
