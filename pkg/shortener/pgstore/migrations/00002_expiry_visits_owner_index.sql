-- Expiry, visit limits and counts, and the index that lists an owner's
-- links newest first. The new columns have constant defaults: adding them
-- does not rewrite the table.
-- +goose Up
ALTER TABLE shortener_links
	ADD COLUMN IF NOT EXISTS expires_at timestamptz,
	ADD COLUMN IF NOT EXISTS max_visits bigint CHECK (max_visits IS NULL OR max_visits > 0),
	ADD COLUMN IF NOT EXISTS visits     bigint NOT NULL DEFAULT 0;

CREATE INDEX IF NOT EXISTS shortener_links_owner_idx
	ON shortener_links (created_by, created_at DESC, code COLLATE "C" DESC)
	WHERE created_by <> '';

-- The first release kept its own version table and refuses a database
-- whose version is newer than its own: recording 2 there stops it from
-- serving links whose expiry and limits it would ignore.
CREATE TABLE IF NOT EXISTS shortener_schema_migrations (
	version    integer     PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO shortener_schema_migrations (version) VALUES (2) ON CONFLICT DO NOTHING;
