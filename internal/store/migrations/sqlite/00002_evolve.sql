-- +goose Up
-- Evolution runs. Everything the engine decides is written here before it
-- acts on it, so that a run killed at any moment resumes where it stood.

-- One row per run: its configuration as resolved when it started, the
-- random generator's state after the last decision, the bandit's state,
-- and how it ended.
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    track           TEXT NOT NULL,
    track_hash      TEXT NOT NULL,
    target_val_loss REAL NOT NULL,
    loss_floor      REAL NOT NULL DEFAULT 0,
    config          TEXT NOT NULL,             -- JSON: evolve.Config, resolved
    models          TEXT NOT NULL DEFAULT '[]', -- JSON: the ensemble
    seed            INTEGER NOT NULL,
    state           TEXT NOT NULL,             -- running | stopped | failed
    stop_reason     TEXT NOT NULL DEFAULT '',
    stop_detail     TEXT NOT NULL DEFAULT '',
    rng             BLOB,
    bandit          TEXT NOT NULL DEFAULT '{}',
    iterations      INTEGER NOT NULL DEFAULT 0, -- iterations sampled
    active_ms       INTEGER NOT NULL DEFAULT 0, -- summed over sessions
    sessions        INTEGER NOT NULL DEFAULT 0,
    started_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    finished_at     INTEGER
);

-- One row per iteration: the sampled state every child of the iteration
-- shares (island, parent, top and diverse sets) and the prompt stage.
CREATE TABLE run_iterations (
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    iteration   INTEGER NOT NULL,
    island      INTEGER NOT NULL,
    parent_id   INTEGER,
    top_ids     TEXT NOT NULL DEFAULT '[]',
    diverse_ids TEXT NOT NULL DEFAULT '[]',
    stage       TEXT NOT NULL,   -- reference | template | meta | mutate
    created_at  INTEGER NOT NULL,
    done_at     INTEGER,
    PRIMARY KEY (run_id, iteration)
);

-- One row per member of the run: the reference, every child, and the
-- copies that seed islands or migrate between them (origin seed and
-- migrant, source_id = the original). A duplicate child points at the
-- program it repeats with source_id and is never evaluated.
CREATE TABLE run_children (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    iteration          INTEGER NOT NULL,
    slot               INTEGER NOT NULL DEFAULT 0,
    island             INTEGER NOT NULL,
    parent_id          INTEGER REFERENCES run_children (id),
    origin             TEXT NOT NULL,           -- reference | seed | migrant | llm | mutate | replay
    source_id          INTEGER REFERENCES run_children (id),
    model              TEXT NOT NULL DEFAULT '',
    stage              TEXT NOT NULL DEFAULT '', -- template | meta | mutate
    template           TEXT NOT NULL DEFAULT '',
    seed               INTEGER NOT NULL DEFAULT 0,
    state              TEXT NOT NULL,           -- queued | fast | fix | ready | evaluating | done
    program_hash       TEXT REFERENCES programs (hash),
    norm_hash          TEXT NOT NULL DEFAULT '',
    description        TEXT NOT NULL DEFAULT '',
    idea               TEXT NOT NULL DEFAULT '',
    fix_attempts       INTEGER NOT NULL DEFAULT 0,
    verdict            TEXT NOT NULL DEFAULT '',
    reason             TEXT NOT NULL DEFAULT '',
    error              TEXT NOT NULL DEFAULT '',
    fast_evaluation_id INTEGER REFERENCES evaluations (id),
    evaluation_id      INTEGER REFERENCES evaluations (id),
    val_loss           REAL,
    train_time_ms      REAL,
    step_avg_ms        REAL,
    score              REAL,
    summary            TEXT NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    finished_at        INTEGER
);
CREATE INDEX run_children_run_state ON run_children (run_id, state);
CREATE INDEX run_children_run_norm ON run_children (run_id, norm_hash);

-- The steps of a child's life: the first proposal, each fix, and the fast
-- check of each candidate program.
CREATE TABLE run_attempts (
    id                 INTEGER PRIMARY KEY,
    child_id           INTEGER NOT NULL REFERENCES run_children (id) ON DELETE CASCADE,
    attempt            INTEGER NOT NULL,        -- 0 first proposal, then 1..N fixes
    kind               TEXT NOT NULL,           -- propose | fix_apply | fix_run
    llm_call_id        INTEGER,
    program_hash       TEXT,
    edit               TEXT NOT NULL DEFAULT '', -- JSON: the parsed edit and how it applied
    error              TEXT NOT NULL DEFAULT '', -- why it did not yield a program
    fast_evaluation_id INTEGER,
    fast_verdict       TEXT NOT NULL DEFAULT '',
    fast_reason        TEXT NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL
);
CREATE INDEX run_attempts_child ON run_attempts (child_id);

-- Every model call: the (redacted) request before it is sent, then the
-- answer, usage and cost. A call still pending when a run resumes was cut
-- off and is marked lost.
CREATE TABLE llm_calls (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER REFERENCES runs (id) ON DELETE CASCADE,
    child_id         INTEGER,
    purpose          TEXT NOT NULL,   -- template | idea | implement | fix
    model            TEXT NOT NULL,
    state            TEXT NOT NULL,   -- pending | done | failed | lost
    request          TEXT NOT NULL,   -- JSON llm.Request, redacted
    answer           TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    server_model     TEXT NOT NULL DEFAULT '',
    provider         TEXT NOT NULL DEFAULT '',
    finish_reason    TEXT NOT NULL DEFAULT '',
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens    INTEGER NOT NULL DEFAULT 0,
    estimated        INTEGER NOT NULL DEFAULT 0,
    cost_usd         REAL NOT NULL DEFAULT 0,
    price_unknown    INTEGER NOT NULL DEFAULT 0,
    latency_ms       REAL NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    request_id       TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER
);
CREATE INDEX llm_calls_run ON llm_calls (run_id, child_id);

-- The elite archive, rewritten in the transaction that changes it.
CREATE TABLE run_archive (
    run_id   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    child_id INTEGER NOT NULL REFERENCES run_children (id),
    position INTEGER NOT NULL,
    PRIMARY KEY (run_id, child_id)
);

-- What happened to a run: sessions started and ended, migrations (the key
-- makes each happen once), the switch to meta-prompting.
CREATE TABLE run_events (
    id        INTEGER PRIMARY KEY,
    run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind      TEXT NOT NULL,
    key       TEXT NOT NULL DEFAULT '',
    iteration INTEGER NOT NULL DEFAULT 0,
    detail    TEXT NOT NULL DEFAULT '{}',
    at        INTEGER NOT NULL
);
CREATE INDEX run_events_run ON run_events (run_id, kind);
CREATE UNIQUE INDEX run_events_key ON run_events (run_id, kind, key) WHERE key != '';

-- +goose Down
DROP TABLE run_events;
DROP TABLE run_archive;
DROP TABLE llm_calls;
DROP TABLE run_attempts;
DROP TABLE run_children;
DROP TABLE run_iterations;
DROP TABLE runs;
