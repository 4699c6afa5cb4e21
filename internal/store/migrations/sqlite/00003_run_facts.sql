-- +goose Up
-- Facts about a run that its readers (reports, the dashboard) need without
-- decoding the engine's configuration: the objective that ranks its
-- programs, and the first iteration planned for meta-prompting (-1: the
-- run never meta-prompts: it is off, or no model of the run writes
-- ideas). Runs recorded before these columns get them from the stored,
-- resolved configuration.
ALTER TABLE runs ADD COLUMN objective TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN meta_start INTEGER NOT NULL DEFAULT -1;
UPDATE runs SET objective = COALESCE(NULLIF(json_extract(config, '$.objective'), ''), 'score');
UPDATE runs SET meta_start = CASE
    WHEN json_extract(config, '$.meta_prompting.enabled') = 0 THEN -1
    WHEN COALESCE(json_extract(config, '$.meta_prompting.probability'), 1) <= 0 THEN -1
    WHEN NOT EXISTS (SELECT 1 FROM json_each(runs.models) WHERE json_extract(value, '$.kind') = 'llm') THEN -1
    ELSE COALESCE(json_extract(config, '$.meta_prompting.start_iteration'), 20)
END;

-- +goose Down
ALTER TABLE runs DROP COLUMN meta_start;
ALTER TABLE runs DROP COLUMN objective;
