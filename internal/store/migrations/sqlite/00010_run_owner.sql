-- +goose Up
-- The process that runs a run (host/boot/pid/start, see owner.go) and
-- when its claim lapses unless renewed (Unix ms, by the database's clock),
-- so that a second session of a run that is alive elsewhere is refused
-- and a dead one's run can be taken over. '' and 0: nobody runs it.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN lease_until;
ALTER TABLE runs DROP COLUMN owner;
