package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"
)

// A database from before migration 3 gets each run's objective and
// planned meta-prompting start from its stored configuration.
func TestMigrateRunFacts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db := oldDatabase(t, path, 2)
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
	s, err := open(ctx, path, Self())
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

// oldDatabase makes a SQLite database at path with the schema of the
// given version, as a frontier of then made it (the same migration files).
func oldDatabase(t *testing.T, path string, version int64) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"_pragma": {"foreign_keys(1)", "journal_mode(WAL)"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := fs.Sub(migrations, "migrations/sqlite")
	prov, err := goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(goose.NewGoMigration(8, nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prov.UpTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	return db
}

// A database made before programs, prompts and answers were stored by
// content (schema 6, as main made it until then) opens, and everything it
// held reads back: the migration moved every row, byte for byte.
func TestMigrateToContents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db := oldDatabase(t, path, 6)
	progs := [][]byte{[]byte("print(1)\n"), {}, bytes.Repeat([]byte("x = 1\n"), 20000)}
	for i := 0; i < 30; i++ {
		progs = append(progs, []byte(fmt.Sprintf("# program %d\n%s", i, bytes.Repeat([]byte("y = x * 2 + 1\n"), 500+i))))
	}
	for i, src := range progs {
		if _, err := db.ExecContext(ctx, `INSERT INTO programs (hash, norm_hash, source, size, created_at) VALUES ($1, $2, $3, $4, $5)`,
			Hash(src), "n", src, len(src), i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO runs (name, track, track_hash, target_val_loss, config, seed, state, started_at, updated_at)
		VALUES ('old', 't', 'h', 4, '{}', 1, 'stopped', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	type call struct{ request, answer string }
	calls := []call{{"{\"prompt\":\"a\"}", "answer a"}, {"{}", ""}, {strings.Repeat("long prompt ", 30000), "ok\u00e9"}}
	for _, c := range calls {
		if _, err := db.ExecContext(ctx, `INSERT INTO llm_calls (run_id, purpose, model, state, request, answer, created_at)
			VALUES (1, 'template', 'm', 'done', $1, $2, 0)`, c.request, c.answer); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO evaluations (program_hash, track, track_hash, seed, state, started_at)
		VALUES ($1, 't', 'h', 1, 'done', 0)`, Hash(progs[0])); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := open(ctx, path, Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.schema(ctx)
	if err != nil || st.Pending() || st.Version != st.Latest {
		t.Fatalf("schema after opening: %+v, %v", st, err)
	}
	for i, src := range progs {
		got, err := s.Program(ctx, Hash(src))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("program %d reads back as %d bytes (%v), want %d", i, len(got), err, len(src))
		}
	}
	got, err := s.LLMCalls(ctx, 1, true)
	if err != nil || len(got) != len(calls) {
		t.Fatalf("LLMCalls = %d calls, %v", len(got), err)
	}
	for i, c := range calls {
		if got[i].Request != c.request || got[i].Answer != c.answer {
			t.Errorf("call %d reads back as %q / %q", i, trim(got[i].Request), trim(got[i].Answer))
		}
	}
	if e, err := s.Evaluation(ctx, 1); err != nil || e.ProgramHash != Hash(progs[0]) {
		t.Errorf("evaluation 1: %+v, %v", e, err)
	}
	// New rows after the migration share the migrated chunks.
	if _, err := s.PutProgram(ctx, append(bytes.Clone(progs[2]), '#'), ""); err != nil {
		t.Fatal(err)
	}
	var cols int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('programs') WHERE name = 'source'`).Scan(&cols); err != nil || cols != 0 {
		t.Errorf("programs.source is still there (%d, %v)", cols, err)
	}
}

func trim(s string) string { return s[:min(len(s), 40)] }
