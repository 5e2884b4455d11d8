-- Sign-in state is bounded in rows as well as in rate (issue 31): each row of auth_challenges
-- records the client address that created it, so that one address keeps a few live
-- challenges (its oldest are dropped) and the table as a whole a bounded number. Before, any
-- client could create rows as fast as it was allowed requests, and with `Authorization: x`
-- that was without limit: 6,000 requests left 6,400 rows and slowed every sign-in.
-- Existing rows (short-lived) keep no address.
ALTER TABLE auth_challenges ADD COLUMN client_key TEXT;
CREATE INDEX auth_challenges_client ON auth_challenges (client_key, expires_at);
