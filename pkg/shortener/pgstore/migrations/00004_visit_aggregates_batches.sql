-- A row of shortener_visits stands for the visits of one link in one
-- second with the same dimensions (the shortener aggregates them in
-- memory before writing): visits is their number. Rows written before
-- hold one visit each. The default is a constant: adding the column does
-- not rewrite the table.
--
-- shortener_visit_batches records the ID of every batch of visit counts
-- and statistics written, in the batch's own transaction: a batch whose
-- commit succeeded but whose acknowledgement was lost is retried with the
-- same ID and then skipped instead of counted twice. IDs are kept for a
-- day.
-- +goose Up
ALTER TABLE shortener_visits ADD COLUMN IF NOT EXISTS visits bigint NOT NULL DEFAULT 1;

CREATE TABLE IF NOT EXISTS shortener_visit_batches (
	id         uuid        PRIMARY KEY,
	written_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS shortener_visit_batches_written_at_idx ON shortener_visit_batches (written_at);
