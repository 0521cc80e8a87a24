-- Per-visit statistics. shortener_visits holds raw visits (no IP
-- address, User-Agent, cookie or query string: see the README), dropped
-- after the retention period. shortener_visit_counts holds what the
-- statistics API reads: per link and bucket (a UTC day, kept as long as
-- the link; or an hour, dropped with the raw visits), the visits of
-- people ('t') and of bots ('b'), and the visits of people by referrer
-- host ('r'), device class ('d'), browser family ('w') and country ('c').
-- One marginal per dimension, not their cross product: a year of a link
-- is a few dozen rows a day, whatever its traffic.
-- +goose Up
CREATE TABLE IF NOT EXISTS shortener_visits (
	code          text        NOT NULL REFERENCES shortener_links (code) ON DELETE CASCADE,
	at            timestamptz NOT NULL,
	referrer_host text        NOT NULL,
	device        text        NOT NULL,
	browser       text        NOT NULL,
	country       text        NOT NULL,
	bot           boolean     NOT NULL
);
CREATE INDEX IF NOT EXISTS shortener_visits_code_at_idx ON shortener_visits (code, at);
-- Rows arrive roughly in time order: a BRIN index finds old ones cheaply.
CREATE INDEX IF NOT EXISTS shortener_visits_at_brin ON shortener_visits USING brin (at);

CREATE TABLE IF NOT EXISTS shortener_visit_counts (
	code   text        NOT NULL REFERENCES shortener_links (code) ON DELETE CASCADE,
	hourly boolean     NOT NULL,
	bucket timestamptz NOT NULL,
	dim    "char"      NOT NULL,
	value  text        NOT NULL,
	visits bigint      NOT NULL,
	PRIMARY KEY (code, hourly, bucket, dim, value)
);
