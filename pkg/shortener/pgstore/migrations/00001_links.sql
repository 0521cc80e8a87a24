-- The links table as the first release created it (IF NOT EXISTS: a
-- database migrated by that release, before goose, already has it).
-- +goose Up
CREATE TABLE IF NOT EXISTS shortener_links (
	code       text        PRIMARY KEY,
	url        text        NOT NULL,
	created_by text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now()
);
