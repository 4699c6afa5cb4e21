-- +goose Up
-- When a claim's confirmation series started, so that a series cut off by
-- a kill resumes with the runs it finished (its evaluations started at or
-- after this time), instead of running them again.
ALTER TABLE run_confirmations ADD COLUMN started_at INTEGER;

-- The conditions a calibration was taken under (JSON: the load average,
-- and later what else is recorded of a machine's state), beside when.
ALTER TABLE bench_calibrations ADD COLUMN conditions TEXT NOT NULL DEFAULT '{}';

-- An attempt's best node re-timed in alternation with its start
-- (bench run --retime K): the runs of each, their means, Welch's p, the
-- evaluations, and the FSR of the search's single timing kept beside the
-- FSR scored from the series. notes holds warnings about the attempt's
-- times (a calibration the nodes drifted from, nodes far slower than a
-- published start).
ALTER TABLE bench_attempts ADD COLUMN retime_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bench_attempts ADD COLUMN retime_start_ms REAL;
ALTER TABLE bench_attempts ADD COLUMN retime_best_ms REAL;
ALTER TABLE bench_attempts ADD COLUMN retime_p REAL;
ALTER TABLE bench_attempts ADD COLUMN retime_evaluations TEXT NOT NULL DEFAULT '[]';
ALTER TABLE bench_attempts ADD COLUMN single_fsr REAL;
ALTER TABLE bench_attempts ADD COLUMN notes TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE bench_attempts DROP COLUMN notes;
ALTER TABLE bench_attempts DROP COLUMN single_fsr;
ALTER TABLE bench_attempts DROP COLUMN retime_evaluations;
ALTER TABLE bench_attempts DROP COLUMN retime_p;
ALTER TABLE bench_attempts DROP COLUMN retime_best_ms;
ALTER TABLE bench_attempts DROP COLUMN retime_start_ms;
ALTER TABLE bench_attempts DROP COLUMN retime_n;
ALTER TABLE bench_calibrations DROP COLUMN conditions;
ALTER TABLE run_confirmations DROP COLUMN started_at;
