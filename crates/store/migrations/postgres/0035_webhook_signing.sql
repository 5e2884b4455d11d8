-- Generic webhooks are signed (issue 31): each generic channel gets a secret of its own when
-- it is created, shown to its owner once, and every message carries an HMAC-SHA256 of its
-- body made with it (`X-Tidings-Signature`). The secret is stored as it is, because signing
-- needs it; the channel's URL, stored beside it, is as much a secret already. Channels from
-- before this version have none and are sent unsigned until their owner renews the secret
-- (`POST /api/v1/webhooks/{id}/secret`).
ALTER TABLE webhooks ADD COLUMN signing_secret TEXT;
