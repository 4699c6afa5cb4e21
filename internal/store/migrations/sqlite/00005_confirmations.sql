-- +goose Up
-- Where a run's track came from when it was a folder (empty: a track found
-- by name), so that --resume finds the same spec again.
ALTER TABLE runs ADD COLUMN track_dir TEXT NOT NULL DEFAULT '';

-- Claims that a program is faster than a run's standing record, and what
-- testing them found (internal/runs.Claim): an interleaved series run by
-- the engine or by `frontier runs confirm`, or a single timing judged
-- against the run's measured noise. Failed and rejected claims are kept:
-- a record that did not hold up says so wherever it is shown.
CREATE TABLE run_confirmations (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    child_id    INTEGER NOT NULL,
    baseline_id INTEGER NOT NULL,
    method      TEXT NOT NULL,
    state       TEXT NOT NULL,
    source      TEXT NOT NULL DEFAULT 'engine',
    pairs       INTEGER NOT NULL DEFAULT 0,
    single_ms   REAL,
    alpha       REAL NOT NULL DEFAULT 0,
    time_ms     REAL,
    baseline_ms REAL,
    time_sd     REAL,
    baseline_sd REAL,
    loss_mean   REAL,
    loss_sd     REAL,
    speedup     REAL,
    speedup_lo  REAL,
    speedup_hi  REAL,
    time_p      REAL,
    loss_p      REAL,
    noise_cv    REAL,
    noise_df    INTEGER NOT NULL DEFAULT 0,
    reason      TEXT NOT NULL DEFAULT '',
    evaluations TEXT NOT NULL DEFAULT '[]',
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX run_confirmations_run ON run_confirmations (run_id, id);

-- +goose Down
DROP TABLE run_confirmations;
ALTER TABLE runs DROP COLUMN track_dir;
