package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// A location says where a store is, as a string: "sqlite:PATH" or a bare
// path (a SQLite file on this machine), or a PostgreSQL URL
// ("postgres://user:password@host:5432/db?sslmode=require", or
// "postgresql://..."), as the config's db: key, FRONTIER_DB and --db give it.

// Dialects of SQL that the store speaks.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Location is a parsed location.
type Location struct {
	// Dialect is SQLite or Postgres.
	Dialect string
	// Path is the SQLite database's file (or ":memory:").
	Path string
	// URL is the PostgreSQL connection URL, as given.
	URL string
}

// schemes is the registry of implementations: each scheme a location may
// start with, and how a store of that kind is opened.
var schemes = []struct {
	scheme  string
	dialect string
	open    func(ctx context.Context, loc Location, owner Owner) (*sqlStore, error)
}{
	{"sqlite", SQLite, openSQLite},
	{"postgres", Postgres, openPostgres},
	{"postgresql", Postgres, openPostgres},
}

// ParseLocation reads a location. A string with no scheme is a SQLite
// file's path (so is "name:x.db", a file whose name holds a colon); an
// unknown scheme followed by "//" (mysql://...) is an error that says
// which the store knows.
func ParseLocation(s string) (Location, error) {
	if strings.TrimSpace(s) == "" {
		return Location{}, errors.New("empty database location: give a SQLite file's path, sqlite:PATH, or a postgres:// URL")
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || !validScheme(scheme) {
		return Location{Dialect: SQLite, Path: s}, nil
	}
	for _, sc := range schemes {
		if !strings.EqualFold(scheme, sc.scheme) {
			continue
		}
		if sc.dialect == SQLite {
			// sqlite:PATH, sqlite:///abs/path and sqlite://rel/path.
			p := strings.TrimPrefix(rest, "//")
			if p == "" {
				return Location{}, fmt.Errorf("database location %q names no file: write sqlite:PATH", s)
			}
			return Location{Dialect: SQLite, Path: p}, nil
		}
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, fmt.Errorf("database location %s: %w", redactURL(s), errors.Unwrap(err))
		}
		if u.Opaque != "" {
			return Location{}, fmt.Errorf("database location %s: write it as %s://[user[:password]@]host[:port]/database[?options]", redactURL(s), scheme)
		}
		return Location{Dialect: Postgres, URL: s}, nil
	}
	if strings.HasPrefix(rest, "//") {
		return Location{}, fmt.Errorf("database location %s: unknown scheme %q: use a SQLite file's path, sqlite:PATH, or a postgres:// URL", redactURL(s), scheme)
	}
	// "notes:v2.db": a file whose name holds a colon.
	return Location{Dialect: SQLite, Path: s}, nil
}

// validScheme says whether s reads as a URL scheme (RFC 3986), and is
// not a one-letter drive name.
func validScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// String is the location for messages: a PostgreSQL URL's password is
// left out.
func (l Location) String() string {
	if l.Dialect == Postgres {
		return redactURL(l.URL)
	}
	return l.Path
}

// File is the SQLite database's file, or "" when the store is not a file
// of this machine.
func (l Location) File() string {
	if l.Dialect == SQLite && l.Path != ":memory:" {
		return l.Path
	}
	return ""
}

// redactURL hides a URL's password (and a password= option).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "xxxxx" + s[i:]
			}
		}
		return s
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Open opens the store at a location, as this process (see Self), and
// brings its schema up to date: a SQLite file always (it is created when
// it does not exist); a PostgreSQL database only when it holds no schema
// yet, since a shared database is upgraded on purpose, with
// `frontier db migrate` (see Migrate), while no run writes it.
func Open(ctx context.Context, location string) (Store, error) {
	return OpenAs(ctx, location, Self())
}

// OpenAs opens the store at a location as owner: the evaluations it
// creates and the runs it claims are owner's. Tests open one store as
// another process, or another machine.
func OpenAs(ctx context.Context, location string, owner Owner) (Store, error) {
	s, err := open(ctx, location, owner)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func open(ctx context.Context, location string, owner Owner) (*sqlStore, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	for _, sc := range schemes {
		if sc.dialect == loc.Dialect {
			return sc.open(ctx, loc, owner)
		}
	}
	return nil, fmt.Errorf("open store %s: no implementation for %s", loc, loc.Dialect)
}
