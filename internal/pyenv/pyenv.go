// Package pyenv finds the Python interpreter that runs training programs and
// describes it: versions of Python, PyTorch and NumPy, threads, BLAS, CUDA.
package pyenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Info describes an interpreter.
type Info struct {
	Path        string   `json:"path"`
	Python      string   `json:"python"`
	Torch       string   `json:"torch,omitempty"`
	Numpy       string   `json:"numpy,omitempty"`
	Threads     int      `json:"threads,omitempty"`
	BLAS        string   `json:"blas,omitempty"`
	CUDA        string   `json:"cuda,omitempty"` // CUDA version torch was built with
	GPUs        []string `json:"gpus,omitempty"`
	Distributed bool     `json:"distributed,omitempty"`
	TorchError  string   `json:"torch_error,omitempty"`
	// Paths are the folders the interpreter reads its standard library
	// and packages from: a sandbox that hides a user's home keeps them
	// readable.
	Paths []string `json:"paths,omitempty"`
	// BLASCore is the kernel set OpenBLAS runs on this CPU (its
	// openblas_get_corename), "" when torch does not call OpenBLAS.
	BLASCore string `json:"blas_core,omitempty"`
	// BLASLib is the library BLASCore was read from.
	BLASLib string `json:"blas_lib,omitempty"`
	// CoreType, when set, is the OPENBLAS_CORETYPE training programs run
	// with (ProgramEnv): the user's own, or the kernel set this CPU
	// supports where OpenBLAS fell back to a generic one (see TuneBLAS).
	CoreType string `json:"blas_coretype,omitempty"`
	// BLASFallback is the core OpenBLAS chose on its own when CoreType
	// replaced it; BLASNote says what TuneBLAS found, in words.
	BLASFallback string `json:"blas_fallback,omitempty"`
	BLASNote     string `json:"blas_note,omitempty"`
}

// InstallHint tells the user how to get PyTorch.
const InstallHint = "install PyTorch: on Debian or Ubuntu `sudo apt-get install python3-torch python3-numpy libopenblas0-pthread`, " +
	"elsewhere `python3 -m pip install torch numpy`; or point `python:` in frontier.yaml at an interpreter that has it"

// ErrNoTorch means no candidate interpreter can import torch.
var ErrNoTorch = errors.New("no Python interpreter with PyTorch found")

const probeScript = `
import json, os, platform, sys
out = {"python": platform.python_version()}
paths = {os.path.realpath(sys.executable)}
for p in [sys.prefix, sys.base_prefix, sys.exec_prefix] + sys.path:
    if p and os.path.isdir(p):
        paths.add(os.path.realpath(p))
out["paths"] = sorted(paths)
try:
    import torch
    out["torch"] = torch.__version__
    out["threads"] = torch.get_num_threads()
    out["cuda"] = torch.version.cuda or ""
    out["distributed"] = torch.distributed.is_available()
    cfg = torch.__config__.show()
    blas = ""
    for part in cfg.replace(",", " ").split():
        if part.startswith("BLAS_INFO="):
            blas = part.split("=", 1)[1]
    # "generic" means the system's libblas: name the library actually loaded.
    torch.ones(64, 64) @ torch.ones(64, 64)
    try:
        libs, paths = set(), set()
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                name = path.rsplit("/", 1)[-1]
                if "blas" in name.lower() or "mkl_rt" in name.lower():
                    libs.add(name)
                    paths.add(path)
        if libs:
            blas = "%s (%s)" % (blas, ", ".join(sorted(libs))) if blas else ", ".join(sorted(libs))
        # The kernels OpenBLAS picked for this CPU: on a CPU newer than the
        # library it falls back to generic ones, several times slower.
        import ctypes
        for path in sorted(paths):
            try:
                corename = ctypes.CDLL(path).openblas_get_corename
            except (OSError, AttributeError):
                continue
            corename.restype = ctypes.c_char_p
            out["blas_core"] = (corename() or b"").decode("ascii", "replace")
            out["blas_lib"] = path
            break
    except OSError:
        pass
    out["blas"] = blas
    if torch.cuda.is_available():
        out["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
except Exception as e:
    out["torch_error"] = "%s: %s" % (type(e).__name__, e)
try:
    import numpy
    out["numpy"] = numpy.__version__
except Exception:
    pass
print(json.dumps(out))
`

// Probe runs python and reports what it has. The error is non-nil only
// when the interpreter cannot run at all.
func Probe(ctx context.Context, python string) (*Info, error) {
	return run(ctx, python, nil, "-c", probeScript)
}

// run runs python with args, frontier's environment and env added, and
// reads the JSON object it prints into an Info.
func run(ctx context.Context, python string, env []string, args ...string) (*Info, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	path, err := exec.LookPath(python)
	if err != nil {
		return nil, fmt.Errorf("python %q not found: %w", python, err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = probeEnv(os.Environ(), env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run %s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	info := &Info{Path: path}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), info); err != nil {
		return nil, fmt.Errorf("probe %s: unexpected output %q", path, stdout.String())
	}
	return info, nil
}

// probeEnv is environ as training programs see OPENBLAS_CORETYPE, then
// extra: programs get only a value that is set (Info.ProgramEnv), and
// OpenBLAS reads an empty one as a choice of its own ("Cooperlake" here,
// where unset it chose "Prescott"), so a probe that kept it would describe
// kernels the programs never run.
func probeEnv(environ, extra []string) []string {
	out := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		if kv != "OPENBLAS_CORETYPE=" {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// Candidates are the interpreters tried, in order, when none is configured.
var Candidates = []string{"python3", "/usr/bin/python3", "python"}

// Find returns the configured interpreter, or else the first candidate that
// imports torch. A configured interpreter without torch is an error with
// the install hint.
func Find(ctx context.Context, configured string) (*Info, error) {
	return FindNotify(ctx, configured, nil)
}

// FindNotify is Find that calls probing (when not nil) with each
// interpreter before it probes it: importing torch takes seconds, more on
// a busy machine, and the caller may say what is happening meanwhile.
func FindNotify(ctx context.Context, configured string, probing func(python string)) (*Info, error) {
	notify := func(p string) {
		if probing != nil {
			probing(p)
		}
	}
	if configured != "" {
		notify(configured)
		info, err := Probe(ctx, configured)
		if err != nil {
			return nil, err
		}
		if info.Torch == "" {
			return info, fmt.Errorf("%w: %s cannot import torch (%s); %s", ErrNoTorch, info.Path, info.TorchError, InstallHint)
		}
		return TuneBLAS(ctx, info), nil
	}
	var tried []string
	seen := map[string]bool{}
	for _, c := range Candidates {
		path, err := exec.LookPath(c)
		if err != nil || seen[path] {
			continue
		}
		seen[path] = true
		notify(path)
		info, err := Probe(ctx, path)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", path, err))
			continue
		}
		if info.Torch != "" {
			return TuneBLAS(ctx, info), nil
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", path, info.TorchError))
	}
	if len(tried) == 0 {
		return nil, fmt.Errorf("%w: no python3 on PATH; %s", ErrNoTorch, InstallHint)
	}
	return nil, fmt.Errorf("%w; tried %s; %s", ErrNoTorch, strings.Join(tried, ", "), InstallHint)
}
