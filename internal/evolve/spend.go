package evolve

import (
	"context"
	"errors"
	"fmt"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/store"
)

// spend is what the run spends on models: the run's model budget (the
// one authority, which the models' clients draw from too), the dollars and
// tokens spent so far for the status, and the streak of proposals that
// failed in a row, which stops a run whose model does not answer.
type spend struct {
	budget     *llm.Budget
	usd        float64
	tokens     int64
	failStreak int
}

// report shows what the run spent in the status.
func (s *spend) report(st *Status) { st.USD, st.Tokens = s.usd, s.tokens }

// spentUSD is what the run spent on models, in dollars.
func (s *spend) spentUSD() float64 { return s.usd }

// use makes b the run's budget.
func (s *spend) use(b *llm.Budget) { s.budget = b }

// restore starts from what the run's recorded calls cost.
func (s *spend) restore(ctx context.Context, st Store, runID int64) error {
	usd, tokens, _, err := st.RunSpend(ctx, runID)
	s.usd, s.tokens = usd, tokens
	return err
}

// add counts a proposal's calls. Recorded answers (replayed) reach no
// client the budget wraps; their recorded cost counts all the same.
func (s *spend) add(calls []*store.LLMCall, replayed bool) {
	for _, call := range calls {
		s.usd += call.CostUSD
		s.tokens += call.InputTokens + call.OutputTokens
		if replayed {
			s.budget.Record(call.CostUSD, call.InputTokens+call.OutputTokens)
		}
	}
}

// answered resets the failure streak: the model answered.
func (s *spend) answered() { s.failStreak = 0 }

// failed counts a proposal that failed; calls says it failed for its
// model call (not for what the answer held). It reports the streak.
func (s *spend) failed(call bool) int {
	if call {
		s.failStreak++
	}
	return s.failStreak
}

// limit reports the budget that is spent, if any, as a stop reason and
// its detail.
func (s *spend) limit() (string, string) {
	var be *llm.BudgetError
	if !errors.As(s.budget.Err(), &be) {
		return "", ""
	}
	switch reason := budgetStop(be); reason {
	case StopUSD:
		return reason, fmt.Sprintf("the run spent $%.4f of budget.max_usd = $%.2f", be.Spent, be.Limit)
	case StopTokens:
		return reason, fmt.Sprintf("the run used %.0f tokens of budget.max_tokens = %.0f", be.Spent, be.Limit)
	default:
		return reason, be.Error()
	}
}

// budgetStop is the stop reason of a spent budget.
func budgetStop(be *llm.BudgetError) string {
	switch be.Budget {
	case "tokens":
		return StopTokens
	case "calls":
		return StopCalls
	}
	return StopUSD
}

// NewBudget returns the model budget of a run: the evolve budget's dollar
// and token limits where set (budget, with the overrides of the command
// line merged by BudgetConfig.With), else llm.budget's, with what the run has
// spent so far. Pass it to the model clients so that every call of the run
// draws from it.
func NewBudget(ctx context.Context, st Store, runID int64, budget BudgetConfig, llmBudget llm.BudgetConfig) (*llm.Budget, error) {
	var spent llm.Spend
	if runID != 0 {
		usd, tokens, calls, err := st.RunSpend(ctx, runID)
		if err != nil {
			return nil, err
		}
		spent = llm.Spend{USD: usd, Tokens: tokens, Calls: calls}
	}
	return llm.NewBudget(llmBudget.Limited(budget.MaxUSD, budget.MaxTokens), spent), nil
}
