package harness

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Names inside a run folder and a judge folder.
const (
	Dir        = "_frontier"        // the harness client's files in the run folder
	BootFile   = "frontier_boot.py" // the program's entry point
	WireFile   = "frontier_wire.py"
	ModuleFile = "frontier_harness.py"
	StateFile  = "frontier_state.py" // what logits_fn reaches, carried from training to the scorer
	ConfigFile = "config.json"
	Program    = "train.py" // the candidate program, written by the evaluator
	DataDir    = "_data"    // where the training shards appear at train_begin

	JudgeFile       = "frontier_judge.py" // the judge, in a folder the program cannot see
	ChecksFile      = "frontier_checks.py"
	JudgeConfigFile = "judge.json"
)

//go:embed py/frontier_boot.py py/frontier_wire.py py/frontier_harness.py py/frontier_state.py py/frontier_judge.py py/frontier_checks.py
var pyFiles embed.FS

// clientFiles go into the run folder; judgeFiles into the judge's folder.
var (
	clientFiles = []string{BootFile, WireFile, ModuleFile, StateFile}
	judgeFiles  = []string{JudgeFile, ChecksFile}
)

// Source returns the embedded source of one harness file (BootFile,
// ModuleFile, JudgeFile, ...).
func Source(name string) ([]byte, error) {
	b, err := fs.ReadFile(pyFiles, "py/"+name)
	if err != nil {
		return nil, fmt.Errorf("harness file %q: %w", name, err)
	}
	return b, nil
}

// Digest is the SHA-256 of the embedded harness sources. Store it with
// every evaluation: results measured by different harnesses are not
// comparable without saying so.
func Digest() string {
	h := sha256.New()
	for _, name := range append(clientFiles, judgeFiles...) {
		b, _ := fs.ReadFile(pyFiles, "py/"+name) // embedded: cannot fail
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Materialize writes the harness client's files, read-only, into
// runDir/_frontier and returns that folder's absolute path. Existing files
// are replaced.
func Materialize(runDir string) (string, error) {
	return materialize(filepath.Join(runDir, Dir), clientFiles)
}

// MaterializeJudge writes the judge's files, read-only, into dir (a folder
// the program cannot see) and returns its absolute path.
func MaterializeJudge(dir string) (string, error) {
	return materialize(dir, judgeFiles)
}

func materialize(dir string, names []string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("materialize harness in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("materialize harness: %w", err)
	}
	for _, name := range names {
		b, err := Source(name)
		if err != nil {
			return "", err
		}
		if err := writeReadOnly(filepath.Join(dir, name), b); err != nil {
			return "", fmt.Errorf("materialize harness: %w", err)
		}
	}
	return dir, nil
}

// WriteConfig validates cfg and writes it as JSON to path, read-only.
func WriteConfig(path string, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode harness config: %w", err)
	}
	if err := writeReadOnly(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write harness config: %w", err)
	}
	return nil
}

// ReadConfig reads a config written by WriteConfig.
func ReadConfig(path string) (Config, error) {
	var cfg Config
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read harness config: %w", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("read harness config %s: %w", path, err)
	}
	return cfg, nil
}

// writeReadOnly replaces path with a 0444 file holding b. The old file is
// removed first because a read-only file cannot be opened for writing.
func writeReadOnly(path string, b []byte) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Command returns the argv and the harness's environment entries that start
// runDir/train.py under the harness, with runDir as the working directory.
// python is the interpreter (for example /usr/bin/python3). With
// cfg.WorldSize > 1 the boot script starts that many worker processes with
// torchrun's worker environment (RANK, WORLD_SIZE, MASTER_ADDR, ...). The caller adds the rest of the environment (PATH, HOME,
// CUDA_VISIBLE_DEVICES, ...); the runner inherits nothing.
func Command(python, runDir string, cfg Config) (argv []string, env []string) {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		abs = runDir
	}
	boot := filepath.Join(abs, Dir, BootFile)
	prog := filepath.Join(abs, Program)
	if cfg.WorldSize > 1 {
		// The boot script's own launcher, not torchrun: it sets the same
		// worker environment, and torchrun is broken in some distributions
		// (Debian's torch 1.13 under Python 3.11).
		argv = []string{python, "-u", boot, "--nproc=" + strconv.Itoa(cfg.WorldSize), prog}
	} else {
		argv = []string{python, "-u", boot, prog}
	}
	env = []string{
		"FRONTIER_CONFIG=" + filepath.Join(abs, ConfigFile),
		"PYTHONPATH=" + filepath.Join(abs, Dir),
		"PYTHONUNBUFFERED=1",
		"PYTHONDONTWRITEBYTECODE=1",
	}
	if cfg.Threads > 0 {
		// torch parallelizes each op over its OpenMP pool of cfg.Threads.
		// OpenBLAS (Debian's torch calls the pthread build) would start a
		// second pool on the same cores, and the two pools' spinning threads
		// made a step 5-10x slower on a busy 2-core machine; one BLAS thread
		// inside torch's pool does not. Passive OpenMP waiting keeps the
		// timing stable when other processes share the cores, at the price
		// of a wake-up per parallel region on an idle machine.
		n := strconv.Itoa(cfg.Threads)
		env = append(env, "OMP_NUM_THREADS="+n, "MKL_NUM_THREADS="+n, "OPENBLAS_NUM_THREADS=1",
			"OMP_WAIT_POLICY=PASSIVE")
	}
	return argv, env
}
