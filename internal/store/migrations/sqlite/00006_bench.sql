-- +goose Up
-- The reproduction benchmark (frontier bench). A bench run is one suite
-- under one scaffold, model and hint setting; it holds one attempt per task
-- and seed, and each attempt is a search whose nodes are proposed programs.
-- Everything is written before it is acted on, so that a run killed at any
-- moment resumes where it stood. (Numbered 6: 4 and 5 were taken on other
-- branches when this was written.)

CREATE TABLE bench_runs (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    suite       TEXT NOT NULL,
    suite_hash  TEXT NOT NULL,
    scaffold    TEXT NOT NULL,             -- flat | tree | forest | aide | multi-aide | evolve
    model       TEXT NOT NULL,             -- the model's name, or mutate / replay
    hints       TEXT NOT NULL,             -- none | 1 | 2 | 3 | 1+2 | 1+2+3
    config      TEXT NOT NULL,             -- JSON: the run's resolved settings
    state       TEXT NOT NULL,             -- running | stopped | failed
    stop_reason TEXT NOT NULL DEFAULT '',
    stop_detail TEXT NOT NULL DEFAULT '',
    active_ms   INTEGER NOT NULL DEFAULT 0, -- summed over sessions
    sessions    INTEGER NOT NULL DEFAULT 0,
    started_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER
);

-- One search: a task with a seed. The times that score it (start_ms = t_i,
-- goal_ms = t_{i+1}) are recorded with where they came from.
CREATE TABLE bench_attempts (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES bench_runs (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    task         TEXT NOT NULL,
    seed         INTEGER NOT NULL,
    state        TEXT NOT NULL,            -- pending | running | done
    start_hash   TEXT REFERENCES programs (hash),
    evolve_run   TEXT NOT NULL DEFAULT '',  -- the evolve scaffold's run
    start_ms     REAL NOT NULL DEFAULT 0,
    goal_ms      REAL NOT NULL DEFAULT 0,
    time_source  TEXT NOT NULL DEFAULT '',  -- calibrated | published
    best_node_id INTEGER,
    best_ms      REAL NOT NULL DEFAULT 0,
    fsr          REAL NOT NULL DEFAULT 0,
    nodes        INTEGER NOT NULL DEFAULT 0,
    acceptable   INTEGER NOT NULL DEFAULT 0,
    buggy        INTEGER NOT NULL DEFAULT 0,
    cost_usd     REAL NOT NULL DEFAULT 0,
    tokens       INTEGER NOT NULL DEFAULT 0,
    started_at   INTEGER,
    finished_at  INTEGER,
    UNIQUE (run_id, position)
);

-- The nodes of an attempt's search tree: node 0 is the start program (not
-- executed: its time is the attempt's start_ms), every other one a proposal
-- from its parent, executed unless its edit did not apply or it repeats a
-- node's program (duplicate_of).
CREATE TABLE bench_nodes (
    id            INTEGER PRIMARY KEY,
    attempt_id    INTEGER NOT NULL REFERENCES bench_attempts (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    step          INTEGER NOT NULL DEFAULT 0,
    parent_id     INTEGER REFERENCES bench_nodes (id),
    kind          TEXT NOT NULL,           -- start | draft | improve | debug
    debug_depth   INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL,           -- proposing | evaluating | done
    program_hash  TEXT REFERENCES programs (hash),
    norm_hash     TEXT NOT NULL DEFAULT '',
    duplicate_of  INTEGER REFERENCES bench_nodes (id),
    description   TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    evaluation_id INTEGER REFERENCES evaluations (id),
    verdict       TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    val_loss      REAL,
    train_time_ms REAL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (attempt_id, seq)
);

-- A node's model calls are rows of llm_calls (with no run) that name it.
ALTER TABLE llm_calls ADD COLUMN bench_node_id INTEGER REFERENCES bench_nodes (id);
CREATE INDEX llm_calls_bench_node ON llm_calls (bench_node_id) WHERE bench_node_id IS NOT NULL;

-- A suite's record re-timed on this machine (frontier bench calibrate):
-- n runs in alternation with the suite's other records, per track version
-- and machine class.
CREATE TABLE bench_calibrations (
    id                INTEGER PRIMARY KEY,
    suite             TEXT NOT NULL,
    record            TEXT NOT NULL,
    program_hash      TEXT NOT NULL REFERENCES programs (hash),
    track             TEXT NOT NULL,
    track_hash        TEXT NOT NULL,
    fingerprint_class TEXT NOT NULL,
    n                 INTEGER NOT NULL,
    mean_ms           REAL NOT NULL,
    sd_ms             REAL NOT NULL,
    lo_ms             REAL NOT NULL,
    hi_ms             REAL NOT NULL,
    val_loss          REAL NOT NULL,
    evaluation_ids    TEXT NOT NULL DEFAULT '[]',
    created_at        INTEGER NOT NULL
);
CREATE INDEX bench_calibrations_suite ON bench_calibrations (suite, fingerprint_class);

-- +goose Down
DROP TABLE bench_calibrations;
DROP INDEX llm_calls_bench_node;
ALTER TABLE llm_calls DROP COLUMN bench_node_id;
DROP TABLE bench_nodes;
DROP TABLE bench_attempts;
DROP TABLE bench_runs;
