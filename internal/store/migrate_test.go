package store

import (
	"context"
	"database/sql"
	"io/fs"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
)

// A database from before migration 3 gets each run's objective and
// planned meta-prompting start from its stored configuration.
func TestMigrateRunFacts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"_pragma": {"foreign_keys(1)"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	prov, err := goose.NewProvider(goose.DialectSQLite3, db, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prov.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	llm := `[{"name":"m","kind":"llm","weight":1}]`
	rows := []struct{ name, config, models string }{
		{"default", `{"objective":"time","meta_prompting":{"enabled":true,"start_iteration":5,"probability":1}}`, llm},
		{"off", `{"objective":"score","meta_prompting":{"enabled":false,"start_iteration":5,"probability":1}}`, llm},
		{"never", `{"objective":"loss","meta_prompting":{"enabled":true,"start_iteration":5,"probability":0}}`, llm},
		{"mutate", `{"meta_prompting":{"enabled":true,"start_iteration":5,"probability":1}}`, `[{"name":"mutate","kind":"mutate","weight":1}]`},
	}
	for _, r := range rows {
		if _, err := db.ExecContext(ctx, `INSERT INTO runs (name, track, track_hash, target_val_loss, config, models, seed, state,
			started_at, updated_at) VALUES ($1, 't', 'h', 4, $2, $3, 1, 'stopped', 0, 0)`, r.name, r.config, r.models); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string]struct {
		objective string
		meta      int
	}{"default": {"time", 5}, "off": {"score", -1}, "never": {"loss", -1}, "mutate": {"score", -1}}
	for name, w := range want {
		r, err := s.Run(ctx, name)
		if err != nil || r.Objective != w.objective || r.MetaStart != w.meta {
			t.Errorf("run %s: objective %q, meta start %d (%v); want %q, %d", name, r.Objective, r.MetaStart, err, w.objective, w.meta)
		}
	}
}
