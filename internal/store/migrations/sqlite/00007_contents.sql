-- +goose Up
-- Programs, prompts and answers are stored by content, in chunks that
-- contents share (internal/store/content.go): a child a few lines away
-- from its parent, and a prompt that repeats the contract and the parent,
-- cost what is new. Migration 8 moves the rows that held them whole; 9
-- drops those columns.

-- A chunk: the SHA-256 of its bytes, and the bytes as stored (a codec
-- byte, then raw or deflated).
CREATE TABLE chunks (
    hash BLOB PRIMARY KEY,
    data BLOB NOT NULL
);

-- A content: the SHA-256 of its bytes (hex, as programs.hash), its size,
-- and its chunks' hashes in order (32 bytes each).
CREATE TABLE contents (
    hash   TEXT PRIMARY KEY,
    size   INTEGER NOT NULL,
    chunks BLOB NOT NULL
);

-- A model call's request and answer are contents ('': none).
ALTER TABLE llm_calls ADD COLUMN request_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE llm_calls ADD COLUMN answer_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE llm_calls DROP COLUMN answer_hash;
ALTER TABLE llm_calls DROP COLUMN request_hash;
DROP TABLE contents;
DROP TABLE chunks;
