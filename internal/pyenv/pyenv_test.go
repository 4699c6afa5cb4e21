package pyenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/testdeps"
)

// findTorch finds this machine's interpreter with torch, which tests
// that need it must have.
func findTorch(t *testing.T) *Info {
	t.Helper()
	info, err := Find(context.Background(), "")
	if errors.Is(err, ErrNoTorch) {
		testdeps.Missing(t, "torch", "no PyTorch on this machine: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestFindWithTorch(t *testing.T) {
	info := findTorch(t)
	if info.Torch == "" || info.Python == "" || info.Threads < 1 {
		t.Fatalf("incomplete info: %+v", info)
	}
}

func TestConfiguredWithoutTorch(t *testing.T) {
	// A fake interpreter that runs the probe with an empty module path.
	dir := t.TempDir()
	py := filepath.Join(dir, "python")
	script := "#!/bin/sh\nexec python3 -S -I -c 'import json; print(json.dumps({\"python\": \"3.x\", \"torch_error\": \"ModuleNotFoundError: No module named torch\"}))'\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var probed []string
	_, err := FindNotify(context.Background(), py, func(p string) { probed = append(probed, p) })
	if !errors.Is(err, ErrNoTorch) || !strings.Contains(err.Error(), "apt-get install python3-torch") {
		t.Fatalf("error = %v", err)
	}
	// The caller hears of each interpreter before its probe starts.
	if len(probed) != 1 || probed[0] != py {
		t.Errorf("probing was called with %v, want [%s]", probed, py)
	}
}

func TestMissingInterpreter(t *testing.T) {
	_, err := Find(context.Background(), "/nonexistent/python9")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("error = %v", err)
	}
}
