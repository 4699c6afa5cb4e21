package store

import (
	"context"
	"fmt"
	"time"
)

// PutProgram stores src (once) and returns its hash.
func (s *sqlStore) PutProgram(ctx context.Context, src []byte, normHash string) (string, error) {
	h := Hash(src)
	if normHash == "" {
		normHash = h
	}
	err := s.write(ctx, func() error {
		var one int
		err := s.db.hot().QueryRowContext(ctx, `SELECT 1 FROM programs WHERE hash = $1`, h).Scan(&one)
		if err == nil {
			return nil
		}
		if !notFound(err) {
			return err
		}
		p, err := s.prepareHashed(ctx, s.db.hot(), src, h, &s.known)
		if err != nil {
			return err
		}
		err = s.inTx(ctx, func(tx sqlTx) error {
			if err := p.write(ctx, tx); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO programs (hash, norm_hash, size, created_at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (hash) DO NOTHING`, h, normHash, len(src), time.Now().UnixMilli())
			return err
		})
		if err == nil {
			p.stored(&s.known)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("store program: %w", err)
	}
	return h, nil
}

// Program returns the source of the program with hash h.
func (s *sqlStore) Program(ctx context.Context, h string) ([]byte, error) {
	q := s.db.hot()
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM programs WHERE hash = $1`, h).Scan(&one)
	if notFound(err) {
		return nil, fmt.Errorf("program %s: %w", h, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read program %s: %w", h, err)
	}
	src, err := s.content(ctx, q, h, true)
	if err != nil {
		return nil, fmt.Errorf("read program %s: %w", h, err)
	}
	return src, nil
}

// ProgramsByNormHash returns the hashes of stored programs that differ
// from each other only in whitespace, oldest first.
func (s *sqlStore) ProgramsByNormHash(ctx context.Context, normHash string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT hash FROM programs WHERE norm_hash = $1 ORDER BY created_at`, normHash)
	if err != nil {
		return nil, fmt.Errorf("find programs: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
