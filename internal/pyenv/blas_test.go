package pyenv

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func flagSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(s) {
		m[f] = true
	}
	return m
}

const (
	sse    = "fpu sse sse2 ssse3 sse4_1 sse4_2"
	avx    = sse + " avx"
	avx2   = avx + " avx2 fma"
	avx512 = avx2 + " avx512f avx512cd avx512bw avx512dq avx512vl"
)

func TestWantCore(t *testing.T) {
	for _, c := range []struct {
		core, flags, want string
	}{
		// Debian bookworm's OpenBLAS on a recent Xeon: the generic kernels.
		{"Prescott", avx512, "SkylakeX"},
		{"Prescott", avx2, "Haswell"},
		{"Nehalem", avx, "Sandybridge"},
		{"Prescott", sse, ""},
		// Its own choice is as good as the CPU: left alone.
		{"SkylakeX", avx512, ""},
		{"Cooperlake", avx512, ""},
		{"Haswell", avx2, ""},
		{"Zen", avx2, ""},
		// Better than the flags say (a VM that hides flags): left alone.
		{"Haswell", sse, ""},
		// AVX-512 without all of SkylakeX's subsets is not level 3.
		{"Prescott", avx2 + " avx512f", "Haswell"},
		// Names of other architectures and unknown ones: left alone.
		{"ARMV8", avx512, ""},
		{"NeoverseN1", "", ""},
		{"", avx512, ""},
	} {
		if got := wantCore(c.core, flagSet(c.flags)); got != c.want {
			t.Errorf("wantCore(%q, %q) = %q, want %q", c.core, c.flags, got, c.want)
		}
	}
}

func TestCPUFlags(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx avx2 fma\nbugs\t\t: spectre\n\nprocessor\t: 1\nflags\t\t: fpu\n"
	got := cpuFlags(strings.NewReader(in))
	if !got["avx2"] || !got["fma"] || got["spectre"] || len(got) != 4 {
		t.Errorf("flags = %v, want the first processor's 4", got)
	}
	if cpuFlags(strings.NewReader("processor : 0\n")) != nil {
		t.Error("no flags line: want nil")
	}
}

// fakePython writes an interpreter that answers the probe with the core
// a dynamic OpenBLAS would choose: fallback without OPENBLAS_CORETYPE,
// else what the table maps it to (the value itself when not listed).
func fakePython(t *testing.T, fallback string, honour map[string]string) string {
	t.Helper()
	var cases strings.Builder
	for k, v := range honour {
		cases.WriteString(k + ") core=" + v + " ;; ")
	}
	script := `#!/bin/sh
echo "$OPENBLAS_CORETYPE|$3" >> "$(dirname "$0")/probes"
case "$OPENBLAS_CORETYPE" in
"") core=` + fallback + ` ;; ` + cases.String() + `*) core="$OPENBLAS_CORETYPE" ;;
esac
echo "{\"python\": \"3.x\", \"torch\": \"9.9\", \"threads\": 1, \"blas_core\": \"$core\", \"blas_lib\": \"/lib/libopenblas.so\"}"
`
	py := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return py
}

func probes(t *testing.T, py string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(py), "probes"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestTuneBLAS(t *testing.T) {
	ctx := context.Background()
	// tune probes a fake interpreter and tunes it on a CPU with flags, the
	// user's OPENBLAS_CORETYPE being set; it returns the info and each
	// look's OPENBLAS_CORETYPE and library argument.
	tune := func(t *testing.T, fallback string, honour map[string]string, flags, set string) (*Info, []string) {
		t.Helper()
		py := fakePython(t, fallback, honour)
		info, err := Probe(ctx, py)
		if err != nil {
			t.Fatal(err)
		}
		return tuneBLAS(ctx, info, flagSet(flags), set), probes(t, py)
	}
	t.Run("fallback replaced", func(t *testing.T) {
		info, looks := tune(t, "Prescott", nil, avx512, "")
		if info.CoreType != "SkylakeX" || info.BLASCore != "SkylakeX" || info.BLASFallback != "Prescott" {
			t.Fatalf("info = %+v", info)
		}
		if got := info.ProgramEnv(); len(got) != 1 || got[0] != "OPENBLAS_CORETYPE=SkylakeX" {
			t.Errorf("ProgramEnv = %v", got)
		}
		if got := info.BLASName(); got != "OpenBLAS SkylakeX" {
			t.Errorf("BLASName = %q", got)
		}
		if !strings.Contains(info.BLASNote, "Prescott") || !strings.Contains(info.BLASNote, "OPENBLAS_CORETYPE=SkylakeX") {
			t.Errorf("note = %q", info.BLASNote)
		}
		// The second look loads the probe's library, not torch.
		if len(looks) != 2 || looks[0] != "|" || looks[1] != "SkylakeX|/lib/libopenblas.so" {
			t.Errorf("looks (OPENBLAS_CORETYPE|library) %q, want the plain probe, then SkylakeX with the library", looks)
		}
	})
	t.Run("library keeps its choice", func(t *testing.T) {
		// An OpenBLAS that ignores the setting (a build without
		// DYNAMIC_ARCH): nothing is set, and the note says why.
		info, _ := tune(t, "Prescott", map[string]string{"SkylakeX": "Prescott"}, avx512, "")
		if info.CoreType != "" || info.ProgramEnv() != nil || info.BLASCore != "Prescott" || info.BLASFallback != "" {
			t.Fatalf("info = %+v", info)
		}
		if !strings.Contains(info.BLASNote, `chose "Prescott"`) {
			t.Errorf("note = %q", info.BLASNote)
		}
		if got := info.BLASName(); got != "OpenBLAS Prescott" {
			t.Errorf("BLASName = %q", got)
		}
	})
	t.Run("right choice looked at once", func(t *testing.T) {
		info, looks := tune(t, "Haswell", nil, avx2, "")
		if info.CoreType != "" || info.BLASNote != "" || info.ProgramEnv() != nil || len(looks) != 1 {
			t.Fatalf("info = %+v, looks %q", info, looks)
		}
	})
	t.Run("user's setting kept", func(t *testing.T) {
		info, looks := tune(t, "Prescott", nil, avx512, "Haswell")
		if info.CoreType != "Haswell" || info.ProgramEnv()[0] != "OPENBLAS_CORETYPE=Haswell" || len(looks) != 1 {
			t.Fatalf("info = %+v, looks %q: want the user's setting, not tried again", info, looks)
		}
	})
	t.Run("second look fails", func(t *testing.T) {
		py := fakePython(t, "Prescott", nil)
		info, _ := Probe(ctx, py)
		os.Remove(py)
		info = tuneBLAS(ctx, info, flagSet(avx512), "")
		if info.CoreType != "" || !strings.Contains(info.BLASNote, "failed") {
			t.Fatalf("info = %+v", info)
		}
	})
	t.Run("no OpenBLAS", func(t *testing.T) {
		info := tuneBLAS(ctx, &Info{Torch: "2.5"}, flagSet(avx512), "")
		if info.CoreType != "" || info.BLASName() != "" || info.ProgramEnv() != nil {
			t.Fatalf("info = %+v", info)
		}
	})
}

// TestFindTunesBLAS checks the real interpreter: where torch calls
// OpenBLAS the probe names its kernels, and the kernels programs run
// with are not below what this CPU supports unless the note says why.
func TestFindTunesBLAS(t *testing.T) {
	info := findTorch(t)
	if !strings.Contains(strings.ToLower(info.BLAS), "openblas") {
		t.Skipf("torch does not call OpenBLAS here (%q)", info.BLAS)
	}
	if info.BLASCore == "" {
		t.Fatalf("OpenBLAS is loaded (%s) but the probe did not name its kernels", info.BLAS)
	}
	if runtime.GOARCH != "amd64" || os.Getenv("OPENBLAS_CORETYPE") != "" {
		return
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	flags := cpuFlags(f)
	f.Close()
	if want := wantCore(info.BLASCore, flags); want != "" && info.BLASNote == "" {
		t.Errorf("programs run with OpenBLAS's %s kernels, below this CPU's %s, and no note says why", info.BLASCore, want)
	}
	t.Logf("%s; %s", info.BLASName(), info.BLASNote)
}

// The probe sees OPENBLAS_CORETYPE as programs do: an empty one is not
// passed on to them, so the probe drops it too; a value is kept.
func TestProbeEnv(t *testing.T) {
	got := probeEnv([]string{"A=1", "OPENBLAS_CORETYPE=", "B=2"}, []string{"X=3"})
	if strings.Join(got, " ") != "A=1 B=2 X=3" {
		t.Errorf("probeEnv = %q", got)
	}
	got = probeEnv([]string{"OPENBLAS_CORETYPE=Haswell"}, nil)
	if len(got) != 1 || got[0] != "OPENBLAS_CORETYPE=Haswell" {
		t.Errorf("probeEnv = %q", got)
	}
}
