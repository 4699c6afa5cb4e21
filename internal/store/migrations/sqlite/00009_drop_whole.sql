-- +goose Up
-- The columns that held programs, requests and answers whole: migration 8
-- moved what they held into contents.
ALTER TABLE programs DROP COLUMN source;
ALTER TABLE llm_calls DROP COLUMN request;
ALTER TABLE llm_calls DROP COLUMN answer;

-- +goose Down
-- The columns come back empty: what they held stays in contents.
ALTER TABLE llm_calls ADD COLUMN answer TEXT NOT NULL DEFAULT '';
ALTER TABLE llm_calls ADD COLUMN request TEXT NOT NULL DEFAULT '';
ALTER TABLE programs ADD COLUMN source BLOB NOT NULL DEFAULT x'';
