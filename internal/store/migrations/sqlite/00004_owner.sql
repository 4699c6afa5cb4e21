-- +goose Up
-- The process that runs an evaluation (host/boot/pid/start, see owner.go),
-- so that the next one can tell a row left 'running' by a process that is
-- gone (killed, or a failure before it recorded the outcome) from one that
-- a live process on this machine runs. Rows from before are ''.
ALTER TABLE evaluations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX evaluations_state ON evaluations (state);

-- +goose Down
DROP INDEX evaluations_state;
ALTER TABLE evaluations DROP COLUMN owner;
