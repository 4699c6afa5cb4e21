-- +goose Up
-- No query looks a run's members up by state or by normalized hash (they
-- are read whole, by run, or by run and update time), and each index
-- cost the writes of a member: its state's entry moves at every step.
DROP INDEX run_children_run_state;
DROP INDEX run_children_run_norm;

-- +goose Down
CREATE INDEX run_children_run_state ON run_children (run_id, state);
CREATE INDEX run_children_run_norm ON run_children (run_id, norm_hash);
