package pyenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// coreLevels ranks the kernel sets of OpenBLAS's x86-64 dynamic builds
// (the names openblas_get_corename returns) by the widest vector
// instructions they use: 0 SSE, 1 AVX, 2 AVX2 with FMA, 3 AVX-512.
var coreLevels = map[string]int{
	"Katmai": 0, "Coppermine": 0, "Northwood": 0, "Prescott": 0, "Banias": 0, "Atom": 0,
	"Core2": 0, "Penryn": 0, "Dunnington": 0, "Nehalem": 0, "Athlon": 0, "Opteron": 0,
	"Opteron_SSE3": 0, "Barcelona": 0, "Nano": 0, "Bobcat": 0, "Unknown": 0,
	"Sandybridge": 1, "Bulldozer": 1, "Piledriver": 1, "Steamroller": 1,
	"Haswell": 2, "Excavator": 2, "Zen": 2,
	"SkylakeX": 3, "Cooperlake": 3, "SapphireRapids": 3,
}

// levelCores are the kernel sets TuneBLAS asks for, by level.
var levelCores = [...]string{1: "Sandybridge", 2: "Haswell", 3: "SkylakeX"}

// cpuLevel is the widest level of coreLevels the CPU's flags (as
// /proc/cpuinfo lists them) support.
func cpuLevel(flags map[string]bool) int {
	switch {
	case flags["avx512f"] && flags["avx512cd"] && flags["avx512bw"] && flags["avx512dq"] && flags["avx512vl"]:
		return 3
	case flags["avx2"] && flags["fma"]:
		return 2
	case flags["avx"]:
		return 1
	}
	return 0
}

// cpuFlags reads the first processor's flags from a /proc/cpuinfo.
func cpuFlags(r io.Reader) map[string]bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		flags := map[string]bool{}
		for _, f := range strings.Fields(v) {
			flags[f] = true
		}
		return flags
	}
	return nil
}

// wantCore returns the OPENBLAS_CORETYPE to ask for when OpenBLAS chose
// core on a CPU with these flags: the kernel set of the CPU's level when
// core's is lower, else "". A core it does not know (another
// architecture's, a newer name) is left alone.
func wantCore(core string, flags map[string]bool) string {
	have, known := coreLevels[core]
	if !known {
		return ""
	}
	if want := cpuLevel(flags); want > have {
		return levelCores[want]
	}
	return ""
}

// TuneBLAS decides the OPENBLAS_CORETYPE of training programs. OpenBLAS
// picks its kernels from the CPU's model number, and a release older than
// the CPU falls back to generic SSE kernels: Debian bookworm's 0.3.21 on a
// recent Intel Xeon picks "Prescott", and its matrix products run about 4
// times slower than with the AVX-512 kernels the CPU supports (the tiny
// track's step about 2.5 times). So when the core OpenBLAS chose is below
// what the CPU's flags support, TuneBLAS loads the library again with
// OPENBLAS_CORETYPE set to the CPU's kernel set and keeps it when OpenBLAS
// took it. A CoreType the user set in the environment is kept as it is.
// Every program of a machine runs with the same setting, so the times it
// measures compare with each other; the result's environment names the
// kernel set (Environment.BLAS).
func TuneBLAS(ctx context.Context, info *Info) *Info {
	var flags map[string]bool
	if runtime.GOARCH == "amd64" {
		if f, err := os.Open("/proc/cpuinfo"); err == nil {
			flags = cpuFlags(f)
			f.Close()
		}
	}
	return tuneBLAS(ctx, info, flags, os.Getenv("OPENBLAS_CORETYPE"))
}

// tuneBLAS is TuneBLAS on a CPU with these flags, the user's
// OPENBLAS_CORETYPE being set.
func tuneBLAS(ctx context.Context, info *Info, flags map[string]bool, set string) *Info {
	if set != "" {
		// The probe ran with it (it inherits frontier's environment).
		info.CoreType = set
		info.BLASNote = "OPENBLAS_CORETYPE=" + set + " from the environment"
		return info
	}
	if info.BLASCore == "" {
		return info
	}
	want := wantCore(info.BLASCore, flags)
	if want == "" {
		return info
	}
	again, err := run(ctx, info.Path, []string{"OPENBLAS_CORETYPE=" + want}, "-c", coreScript, info.BLASLib)
	if err != nil || again.BLASCore == "" {
		info.BLASNote = fmt.Sprintf("OpenBLAS runs its %s kernels on this CPU, which supports %s's; trying OPENBLAS_CORETYPE=%s failed (%v), so programs run with %s's", info.BLASCore, want, want, probeErr(err, again), info.BLASCore)
		return info
	}
	if lvl, ok := coreLevels[again.BLASCore]; !ok || lvl <= coreLevels[info.BLASCore] {
		info.BLASNote = fmt.Sprintf("OpenBLAS runs its %s kernels on this CPU, which supports %s's; with OPENBLAS_CORETYPE=%s it chose %q, so programs run with %s's", info.BLASCore, want, want, again.BLASCore, info.BLASCore)
		return info
	}
	info.BLASFallback, info.BLASCore, info.CoreType = info.BLASCore, again.BLASCore, want
	info.BLASNote = fmt.Sprintf("OpenBLAS chose its %s kernels on this CPU, which supports %s's: programs run with OPENBLAS_CORETYPE=%s (set OPENBLAS_CORETYPE to choose another)", info.BLASFallback, want, want)
	return info
}

func probeErr(err error, info *Info) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("no kernel set named: %s", info.TorchError)
}

// coreScript loads the OpenBLAS library named by its argument, as torch
// did in the probe, and prints the kernel set it chose: hundredths of a
// second, where the probe's import of torch takes more than one.
const coreScript = `
import ctypes, json, sys
out = {}
try:
    corename = ctypes.CDLL(sys.argv[1]).openblas_get_corename
    corename.restype = ctypes.c_char_p
    out["blas_core"] = (corename() or b"").decode("ascii", "replace")
except (OSError, AttributeError, IndexError) as e:
    out["torch_error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
`

// ProgramEnv is the environment training programs need from the
// interpreter's probe: OPENBLAS_CORETYPE when set (TuneBLAS).
func (i *Info) ProgramEnv() []string {
	if i == nil || i.CoreType == "" {
		return nil
	}
	return []string{"OPENBLAS_CORETYPE=" + i.CoreType}
}

// BLASName names the kernels programs run with, for a result's
// environment and its fingerprint class: "OpenBLAS SkylakeX", or ""
// without OpenBLAS. How they were chosen is BLASNote's.
func (i *Info) BLASName() string {
	if i == nil || i.BLASCore == "" {
		return ""
	}
	return "OpenBLAS " + i.BLASCore
}
