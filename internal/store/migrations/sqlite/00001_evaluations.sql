-- +goose Up
-- Programs are content-addressed: hash is the SHA-256 of the source bytes;
-- norm_hash ignores whitespace-only differences (for dedup).
CREATE TABLE programs (
    hash       TEXT PRIMARY KEY,
    norm_hash  TEXT NOT NULL,
    source     BLOB NOT NULL,
    size       INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX programs_norm_hash ON programs (norm_hash);

-- One row per evaluation of a program on a track. Inserted as 'running'
-- before the process starts, so a killed evaluation is visible.
CREATE TABLE evaluations (
    id                INTEGER PRIMARY KEY,
    program_hash      TEXT NOT NULL REFERENCES programs (hash),
    track             TEXT NOT NULL,
    track_hash        TEXT NOT NULL,
    seed              INTEGER NOT NULL,
    fast_only         INTEGER NOT NULL DEFAULT 0,
    state             TEXT NOT NULL,
    verdict           TEXT NOT NULL DEFAULT '',
    reason            TEXT NOT NULL DEFAULT '',
    val_loss          REAL,
    train_time_ms     REAL,
    step_avg_ms       REAL,
    steps             INTEGER,
    tokens_per_s      REAL,
    peak_rss_mb       REAL,
    wall_ms           REAL,
    fingerprint_class TEXT NOT NULL DEFAULT '',
    result            TEXT NOT NULL DEFAULT '{}',
    run_dir           TEXT NOT NULL DEFAULT '',
    started_at        INTEGER NOT NULL,
    finished_at       INTEGER
);
CREATE INDEX evaluations_program ON evaluations (program_hash);
CREATE INDEX evaluations_track_verdict ON evaluations (track, verdict);

-- The telemetry JSONL of an evaluation's full run, kept verbatim.
CREATE TABLE telemetry (
    evaluation_id INTEGER PRIMARY KEY REFERENCES evaluations (id) ON DELETE CASCADE,
    jsonl         BLOB NOT NULL
);

-- +goose Down
DROP TABLE telemetry;
DROP TABLE evaluations;
DROP TABLE programs;
