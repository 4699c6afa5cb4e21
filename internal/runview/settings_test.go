package runview

import (
	"encoding/json"
	"testing"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/store"
)

// TestSettingsDefaults keeps the read model's defaults the engine's: a
// run that recorded no key reads as the engine would have run it, and a
// run that recorded every key (the engine records its resolved
// configuration) reads as recorded.
func TestSettingsDefaults(t *testing.T) {
	resolved, err := json.Marshal(evolve.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	fromEngine, err := SettingsOf(&store.Run{Name: "r", Config: resolved})
	if err != nil {
		t.Fatal(err)
	}
	fromNothing, err := SettingsOf(&store.Run{Name: "r", Config: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if fromEngine != fromNothing {
		t.Errorf("the engine's defaults read as\n%+v\nan empty configuration as\n%+v", fromEngine, fromNothing)
	}
	cfg := evolve.Config{Islands: 7, TopPrograms: new(5), Objective: "time", Budget: evolve.BudgetConfig{MaxUSD: 2.5, MaxDuration: 90e9}}
	cfg.Confirm.Enabled = new(false)
	b, _ := json.Marshal(cfg.Resolved())
	s, err := SettingsOf(&store.Run{Name: "r", Config: b})
	if err != nil {
		t.Fatal(err)
	}
	if s.Islands != 7 || s.TopPrograms != 5 || s.Objective != "time" || s.Budget.MaxUSD != 2.5 || s.Budget.MaxDuration.D().Seconds() != 90 || s.Confirm.Enabled {
		t.Errorf("settings %+v", s)
	}
	if _, err := SettingsOf(&store.Run{Name: "bad", Config: json.RawMessage(`{"islands": "four"}`)}); err == nil {
		t.Error("a configuration that is not the engine's read without an error")
	}
}
