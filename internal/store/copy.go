package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Copied is how many rows Copy copied, per table, in the order it copied
// them.
type Copied []struct {
	Table string
	Rows  int64
}

// Copy copies every row of src into dst, which must hold none (a new
// database: a SQLite file that Open just made, or a PostgreSQL database
// or schema with no rows), keeping every id, in one transaction; then it
// reads both back and compares them row for row. Both must be stores that
// Open returned, at the same schema. progress, when not nil, hears of
// each table as it is copied and as it is checked.
//
// Text that the destination cannot hold (a NUL or invalid UTF-8, which
// SQLite took from an older frontier) is stored as Store says (U+FFFD),
// and compared so.
func Copy(ctx context.Context, dst, src Store, progress func(step, table string, rows int64)) (Copied, error) {
	d, ok1 := dst.(*sqlStore)
	s, ok2 := src.(*sqlStore)
	if !ok1 || !ok2 {
		return nil, errors.New("copy: both stores must be opened by store.Open")
	}
	if d.loc == s.loc {
		return nil, fmt.Errorf("copy: %s is both the source and the destination", s.loc)
	}
	if progress == nil {
		progress = func(string, string, int64) {}
	}
	for _, t := range tables {
		var n int64
		if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM `+t.name).Scan(&n); err != nil {
			return nil, fmt.Errorf("copy: %s: %w", d.loc, err)
		}
		if n > 0 {
			return nil, fmt.Errorf("copy: the destination %s holds data already (%d rows in %s): copy into a new database", d.loc, n, t.name)
		}
	}
	cols := map[string][]column{}
	for _, t := range tables {
		c, err := matchColumns(ctx, d, s, t.name)
		if err != nil {
			return nil, fmt.Errorf("copy: %w", err)
		}
		cols[t.name] = c
	}
	var out Copied
	err := d.write(ctx, func() error {
		out = nil
		return d.inTx(ctx, func(tx sqlTx) error {
			for _, t := range tables {
				n, err := copyTable(ctx, tx, s, t.name, t.key, cols[t.name])
				if err != nil {
					return fmt.Errorf("table %s: %w", t.name, err)
				}
				if n > 0 && d.dialect.name == Postgres && t.key == "id" {
					// The identity goes on after the ids copied.
					if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+t.name+`', 'id'), (SELECT max(id) FROM `+t.name+`))`); err != nil {
						return fmt.Errorf("table %s: %w", t.name, err)
					}
				}
				out = append(out, struct {
					Table string
					Rows  int64
				}{t.name, n})
				progress("copied", t.name, n)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("copy %s to %s: %w (nothing was copied)", s.loc, d.loc, err)
	}
	for _, t := range tables {
		n, err := compareTable(ctx, d, s, t.name, t.key, cols[t.name])
		if err != nil {
			return out, fmt.Errorf("copy %s to %s: the check found %s: %w", s.loc, d.loc, t.name, err)
		}
		progress("checked", t.name, n)
	}
	return out, nil
}

// column is a column of a table, with how the destination stores it.
type column struct {
	name string
	kind byte // 'b' bool, 'i' integer, 'f' float, 't' text, 'x' bytes
}

// matchColumns returns the table's columns, which must be the same in
// both (each dialect's migrations may order them differently).
func matchColumns(ctx context.Context, d, s *sqlStore, table string) ([]column, error) {
	dc, err := columnsOf(ctx, d, table)
	if err != nil {
		return nil, err
	}
	sc, err := columnsOf(ctx, s, table)
	if err != nil {
		return nil, err
	}
	names := func(cs []column) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.name)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(names(dc), names(sc)) {
		return nil, fmt.Errorf("table %s has columns %v in %s but %v in %s: are both at the same schema (frontier db status)?",
			table, names(sc), s.loc, names(dc), d.loc)
	}
	return dc, nil
}

func columnsOf(ctx context.Context, s *sqlStore, table string) ([]column, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT * FROM `+table+` LIMIT 0`)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.loc, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	var out []column
	for _, t := range types {
		c := column{name: t.Name(), kind: 't'}
		switch strings.ToUpper(t.DatabaseTypeName()) {
		case "BOOL", "BOOLEAN":
			c.kind = 'b'
		case "INT8", "INT4", "INT2", "INTEGER", "BIGINT":
			c.kind = 'i'
		case "FLOAT8", "FLOAT4", "REAL", "DOUBLE PRECISION":
			c.kind = 'f'
		case "BYTEA", "BLOB":
			c.kind = 'x'
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// convert returns v as the destination column c stores it.
func (c column) convert(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if c.kind == 'i' {
			if x {
				return int64(1)
			}
			return int64(0)
		}
	case int64:
		switch c.kind {
		case 'b':
			return x != 0
		case 'f':
			return float64(x)
		}
	case float64:
		if c.kind == 'i' && x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x)
		}
	case string:
		if c.kind == 'x' {
			return []byte(x)
		}
		return cleanText(x)
	case []byte:
		if c.kind == 't' {
			return cleanText(string(x))
		}
	}
	return v
}

func selectList(cols []column) string {
	var names []string
	for _, c := range cols {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// copyTable inserts every row of the source's table through tx.
func copyTable(ctx context.Context, tx sqlTx, s *sqlStore, table, key string, cols []column) (int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+selectList(cols)+` FROM `+table+` ORDER BY `+key)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	// As many rows a statement as the parameters allow.
	per := max(1, 20000/len(cols))
	var args []any
	var n, batch int64
	flush := func() error {
		if batch == 0 {
			return nil
		}
		var q strings.Builder
		q.WriteString(`INSERT INTO ` + table + ` (` + selectList(cols) + `) VALUES `)
		for r := range int(batch) {
			if r > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + placeholders(r*len(cols)+1, len(cols)) + ")")
		}
		_, err := tx.ExecContext(ctx, q.String(), args...)
		args, batch = args[:0], 0
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, c := range cols {
			args = append(args, c.convert(vals[i]))
		}
		n++
		batch++
		if batch == int64(per) {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, flush()
}

// compareTable reads the table from both stores, in the same order, and
// compares them row for row; it returns the rows compared.
func compareTable(ctx context.Context, d, s *sqlStore, table, key string, cols []column) (int64, error) {
	q := `SELECT ` + selectList(cols) + ` FROM ` + table + ` ORDER BY ` + key
	sr, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer sr.Close()
	dr, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer dr.Close()
	sv, dv := make([]any, len(cols)), make([]any, len(cols))
	sp, dp := make([]any, len(cols)), make([]any, len(cols))
	for i := range cols {
		sp[i], dp[i] = &sv[i], &dv[i]
	}
	var n int64
	for {
		sok, dok := sr.Next(), dr.Next()
		if !sok || !dok {
			if sok != dok {
				return n, fmt.Errorf("the source has %s rows than the copy after %d", map[bool]string{true: "more", false: "fewer"}[sok], n)
			}
			break
		}
		if err := sr.Scan(sp...); err != nil {
			return n, err
		}
		if err := dr.Scan(dp...); err != nil {
			return n, err
		}
		for i, c := range cols {
			want, got := c.convert(sv[i]), c.convert(dv[i])
			if !sameValue(want, got) {
				return n, fmt.Errorf("row %d (by %s): %s is %v in the source but %v in the copy", n+1, key, c.name, short(want), short(got))
			}
		}
		n++
	}
	if err := errors.Join(sr.Err(), dr.Err()); err != nil {
		return n, err
	}
	return n, nil
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return a == b
}

// short is a value for a message.
func short(v any) string {
	s := fmt.Sprintf("%v", v)
	if b, ok := v.([]byte); ok {
		s = fmt.Sprintf("%d bytes %x", len(b), b[:min(len(b), 8)])
	}
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}
