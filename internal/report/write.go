package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/frontier-bench/frontier/internal/edit"
)

// Files of the report folder, relative to it.
const (
	IndexFile    = "index.html"
	ProgramsFile = "programs.csv"
	BestFile     = "best.py"
	DiffFile     = "best.diff"
	FiguresDir   = "figures"
)

// maxIterationSpan bounds the iterations one report covers: the breakdown
// has one bar per iteration, and a corrupt iteration number (say 2^31)
// must give an error, not an allocation of billions of rows.
const maxIterationSpan = 1_000_000

// Write renders the report of d into dir (created if needed) and returns
// the path of its index.html. The folder holds:
//
//	index.html           the report; inline CSS, no scripts, no network
//	figures/NAME.svg     each figure, fonts embedded
//	figures/NAME.png     the same at 192 dpi
//	programs.csv         every program, one row each
//	best.py, best.diff   the best program and its diff against the reference
//
// Files of an earlier report in dir that this one does not produce (a
// figure with nothing to draw, a best program that no longer exists) are
// removed, so the folder never mixes two runs. Other files are left alone.
func Write(ctx context.Context, dir string, d *Data) (string, error) {
	if d == nil {
		return "", errors.New("write report: no data")
	}
	if dir == "" {
		return "", errors.New("write report: empty output folder; pass one with --out")
	}
	if err := check(d); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, FiguresDir), 0o755); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	a := analyze(d)

	figs := a.figures()
	for _, f := range figs {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("write report: %w", context.Cause(ctx))
		}
		svgPath, pngPath := filepath.Join(dir, f.SVG()), filepath.Join(dir, f.PNG())
		if f.Drawn() {
			svg, png, err := f.render()
			if err != nil {
				f.plot, f.Note = nil, fmt.Sprintf("The figure could not be drawn (%v).", err)
			} else {
				if err := writeFile(svgPath, svg); err != nil {
					return "", err
				}
				if err := writeFile(pngPath, png); err != nil {
					return "", err
				}
				continue
			}
		}
		if err := removeStale(svgPath, pngPath); err != nil {
			return "", err
		}
	}

	var diff string
	var st edit.Stat
	if b := d.Best; b != nil {
		if b.ReferenceSource != "" {
			diff, st = edit.Diff("reference.py", "best.py", []byte(b.ReferenceSource), []byte(b.Source))
		}
		if err := writeFile(filepath.Join(dir, BestFile), []byte(b.Source)); err != nil {
			return "", err
		}
	} else if err := removeStale(filepath.Join(dir, BestFile)); err != nil {
		return "", err
	}
	if diff != "" {
		if err := writeFile(filepath.Join(dir, DiffFile), []byte(diff)); err != nil {
			return "", err
		}
	} else if err := removeStale(filepath.Join(dir, DiffFile)); err != nil {
		return "", err
	}

	var buf bytes.Buffer
	if err := writeCSV(&buf, a); err != nil {
		return "", fmt.Errorf("write report: %s: %w", ProgramsFile, err)
	}
	if err := writeFile(filepath.Join(dir, ProgramsFile), buf.Bytes()); err != nil {
		return "", err
	}

	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("write report: %w", context.Cause(ctx))
	}
	buf.Reset()
	if err := renderHTML(&buf, buildPage(a, figs, diff, st)); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	index := filepath.Join(dir, IndexFile)
	if err := writeFile(index, buf.Bytes()); err != nil {
		return "", err
	}
	return index, nil
}

// check rejects data the report cannot show honestly.
func check(d *Data) error {
	if len(d.Programs) == 0 {
		return nil
	}
	lo, hi := d.Programs[0].Iteration, d.Programs[0].Iteration
	for i := range d.Programs {
		it := d.Programs[i].Iteration
		lo, hi = min(lo, it), max(hi, it)
	}
	if hi-lo >= maxIterationSpan {
		return fmt.Errorf("programs span iterations %d to %d, more than %d; is an iteration number corrupt?", lo, hi, maxIterationSpan)
	}
	return nil
}

// writeFile replaces path atomically, so a reader (a browser reloading
// the report) never sees half a file.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write report: %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// removeStale deletes report files an earlier Write left behind.
func removeStale(paths ...string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write report: remove stale %s: %w", p, err)
		}
	}
	return nil
}
