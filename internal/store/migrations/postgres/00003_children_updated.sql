-- +goose Up
-- A watcher of a run (frontier serve) asks for the members that changed
-- since it last looked: a range of this index, not a scan of the run.
CREATE INDEX run_children_run_updated ON run_children (run_id, updated_at);

-- +goose Down
DROP INDEX run_children_run_updated;
