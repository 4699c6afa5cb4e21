package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// csvHeader names the columns of programs.csv (docs/report.md). Missing
// measurements are empty cells, never 0, so pandas reads them as NaN.
var csvHeader = []string{
	"id", "hash", "iteration", "island", "parent_id", "model", "stage", "verdict", "category", "reason",
	"val_loss", "train_time_ms", "step_avg_ms", "score", "input_tokens", "output_tokens", "cost_usd",
	"fix_attempts", "duplicate", "created_at", "prompt_stage", "source_id", "claim",
}

// writeCSV writes one row per program in the analysis's order.
func writeCSV(w io.Writer, a *analysis) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	optional := func(x float64) string {
		if !measured(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	cost := func(x float64) string {
		if !finite(x) || x < 0 {
			return ""
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	for _, p := range a.progs {
		parent := ""
		if p.ParentID != 0 {
			parent = strconv.FormatInt(p.ParentID, 10)
		}
		created := ""
		if !p.CreatedAt.IsZero() {
			created = p.CreatedAt.UTC().Format(time.RFC3339Nano)
		}
		source, claim := "", ""
		if p.SourceID != 0 {
			source = strconv.FormatInt(p.SourceID, 10)
		}
		if c := a.claims[p.ID]; c != nil {
			claim = c.State
		}
		rec := []string{
			strconv.FormatInt(p.ID, 10), p.Hash, strconv.Itoa(p.Iteration), strconv.Itoa(p.Island), parent,
			p.Model, p.Stage, p.Verdict, string(p.Class()), p.Reason,
			optional(p.ValLoss), optional(p.TrainTimeMs), optional(p.StepAvgMs), optional(p.Score),
			strconv.FormatInt(p.InputTokens, 10), strconv.FormatInt(p.OutputTokens, 10), cost(p.CostUSD),
			strconv.Itoa(p.FixAttempts), strconv.FormatBool(p.Duplicate), created, p.PromptStage, source, claim,
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
