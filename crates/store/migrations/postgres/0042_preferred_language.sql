-- The language of the web UI (issue 34): 'auto' (the browser's, the default) or a language's
-- code. The codes the UI speaks are checked by the server (its list of catalogs), not here,
-- so that adding a language needs no migration.
ALTER TABLE user_preferences ADD COLUMN language TEXT NOT NULL DEFAULT 'auto';
