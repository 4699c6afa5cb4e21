-- +goose Up
-- The machine's state while an evaluation's timed phase ran (JSON: the load
-- average at its start and end, its own CPU time beside its wall time, the
-- CPU time other processes and a hypervisor took meanwhile), so that a
-- timing is never read without the load behind it. NULL for evaluations
-- stored before it was recorded.
ALTER TABLE evaluations ADD COLUMN conditions TEXT;

-- +goose Down
ALTER TABLE evaluations DROP COLUMN conditions;
