package store

import (
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	cases := []struct {
		in            string
		dialect, path string
		shown         string
	}{
		{"/home/a/frontier.db", SQLite, "/home/a/frontier.db", "/home/a/frontier.db"},
		{"frontier.db", SQLite, "frontier.db", "frontier.db"},
		{"sqlite:/abs/x.db", SQLite, "/abs/x.db", "/abs/x.db"},
		{"sqlite:///abs/x.db", SQLite, "/abs/x.db", "/abs/x.db"},
		{"sqlite:rel.db", SQLite, "rel.db", "rel.db"},
		{"SQLITE:rel.db", SQLite, "rel.db", "rel.db"},
		{"notes:v2.db", SQLite, "notes:v2.db", "notes:v2.db"},
		{"C:/x.db", SQLite, "C:/x.db", "C:/x.db"},
		{"postgres://u:pw@db.example:5432/f?sslmode=require", Postgres, "", "postgres://u:xxxxx@db.example:5432/f?sslmode=require"},
		{"postgresql://u@db/f", Postgres, "", "postgresql://u@db/f"},
		{"postgres:///f?host=/tmp/s&password=pw", Postgres, "", "postgres:///f?host=%2Ftmp%2Fs&password=xxxxx"},
	}
	for _, c := range cases {
		loc, err := ParseLocation(c.in)
		if err != nil || loc.Dialect != c.dialect || loc.Path != c.path || loc.String() != c.shown {
			t.Errorf("ParseLocation(%q) = %+v (%q), %v; want %s %q shown as %q", c.in, loc, loc.String(), err, c.dialect, c.path, c.shown)
		}
	}
	for in, want := range map[string]string{
		"":             "empty database location",
		"  ":           "empty database location",
		"sqlite:":      "names no file",
		"mysql://x/y":  "unknown scheme",
		"postgres:foo": "postgres://",
	} {
		if _, err := ParseLocation(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLocation(%q): %v, want an error saying %q", in, err, want)
		}
	}
	if _, err := ParseLocation("postgres://u:secret@[bad"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a URL that does not parse: %v (the password must not show)", err)
	}
}
