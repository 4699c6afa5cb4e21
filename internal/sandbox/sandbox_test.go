//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/runner/runnertest"
)

// TestMain lets the test binary serve as the sandbox helper, as the
// frontier binary does with its hidden sandbox-exec command.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		os.Exit(Helper(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

var testEnv = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}

// caps probes the machine once for all tests.
var caps = sync1(func() Capabilities { return Detect(context.Background()) })

func sync1[T any](f func() T) func() T {
	var (
		done bool
		v    T
	)
	return func() T {
		if !done {
			v, done = f(), true
		}
		return v
	}
}

// wrap returns a sandboxing Local runner in mode, or skips the test when
// the mode is unavailable here.
func wrap(t *testing.T, mode Mode) *Runner {
	t.Helper()
	return wrapWith(t, mode, caps())
}

func wrapWith(t *testing.T, mode Mode, c Capabilities) *Runner {
	t.Helper()
	switch mode {
	case ModeBwrap:
		if !c.BwrapWorks() {
			t.Skipf("bwrap cannot sandbox here: %s (CI installs it with scripts/install-deps.sh)", bwrapProblem(c))
		}
	case ModeLandlock:
		if c.LandlockABI == 0 {
			t.Skipf("no landlock here: %v", c.LandlockErr)
		}
	}
	r, err := Wrap(context.Background(), runner.NewLocal(nil), mode, Options{Capabilities: &c})
	if err != nil {
		t.Fatalf("Wrap(%s): %v", mode, err)
	}
	if r.Mode() != mode {
		t.Fatalf("mode %s, want %s", r.Mode(), mode)
	}
	return r
}

var modes = []Mode{ModeBwrap, ModeLandlock, ModeNone}

func TestContract(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) { runnertest.Run(t, wrap(t, mode)) })
	}
}

// probeResult is what testdata/probe.py reports for one attempt.
type probeResult struct {
	OK  any    `json:"ok"`
	Err string `json:"err"`
}

func (p probeResult) String() string {
	if p.Err != "" {
		return "error " + p.Err
	}
	return fmt.Sprintf("ok %v", p.OK)
}

// TestPolicy runs a program that tries to write outside its folder, read
// hidden files, reach a server outside the sandbox and signal the runner,
// and checks what each mode allows.
func TestPolicy(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			got, outside := runProbe(t, r, false)
			denied := func(name string) bool { return got[name].Err != "" }
			check := func(cond bool, format string, args ...any) {
				t.Helper()
				if !cond {
					t.Errorf(format, args...)
				}
			}
			check(!denied("write_inside"), "cannot write its own folder: %s", got["write_inside"])
			check(got["read_sibling"].OK == "training data", "cannot read a file next to a hidden one: %s", got["read_sibling"])
			check(got["read_fd3"].OK == "VALIDATION-SECRET", "fd 3: %s", got["read_fd3"])
			check(denied("fd4"), "the program inherited a descriptor beyond its ExtraFiles: %s", got["fd4"])
			if mode == ModeNone {
				// The same program unconfined does everything, which shows
				// that the checks below can fail.
				for _, k := range []string{"write_outside", "host_port", "host_port_mptcp", "signal_runner", "loopback"} {
					check(!denied(k), "%s failed unconfined: %s", k, got[k])
				}
				check(got["read_hidden_file"].OK == "VALIDATION-SECRET", "unconfined read: %s", got["read_hidden_file"])
				check(got["udp_received"].OK == "leak", "UDP unconfined: %s", got["udp_received"])
				return
			}
			check(denied("write_outside"), "wrote outside its folder: %s", got["write_outside"])
			if _, err := os.Stat(outside); err == nil {
				t.Errorf("%s exists", outside)
			}
			for _, k := range []string{"read_hidden_file", "read_in_hidden_dir"} {
				check(!strings.Contains(fmt.Sprint(got[k].OK), "SECRET"), "%s: read the secret: %s", k, got[k])
			}
			check(got["cap_eff"].OK == "0000000000000000", "capabilities left: %s", got["cap_eff"])
			abi := caps().LandlockABI
			if mode == ModeBwrap || abi >= 4 {
				check(denied("udp_received"), "a UDP datagram reached the outside: %s", got["udp_received"])
			}
			if mode == ModeBwrap || abi >= 6 {
				check(denied("signal_runner"), "could signal the runner: %s", got["signal_runner"])
			}
			switch {
			case mode == ModeBwrap:
				check(got["loopback"].OK == "ping", "loopback TCP inside the sandbox: %s", got["loopback"])
				check(denied("host_port") && denied("host_port_mptcp"), "reached a server outside the sandbox: %s, MPTCP %s", got["host_port"], got["host_port_mptcp"])
			case abi >= 4:
				// Landlock cannot tell loopback from elsewhere: without
				// LoopbackTCP all TCP is denied. MPTCP, which Landlock
				// does not filter, and UDP are refused by seccomp.
				check(denied("host_port") && denied("loopback"), "TCP not denied: host %s, loopback %s", got["host_port"], got["loopback"])
				check(denied("host_port_mptcp"), "MPTCP got through: %s", got["host_port_mptcp"])
				check(denied("host_udp"), "UDP got through: %s", got["host_udp"])
			}
		})
	}
}

// TestLandlockLoopbackTCP: a multi-process job under landlock keeps TCP,
// loopback included, since Landlock filters ports, not addresses.
func TestLandlockLoopbackTCP(t *testing.T) {
	got, _ := runProbe(t, wrap(t, ModeLandlock), true)
	if got["loopback"].OK != "ping" {
		t.Errorf("loopback TCP: %s", got["loopback"])
	}
	if got["write_outside"].Err == "" {
		t.Errorf("wrote outside: %s", got["write_outside"])
	}
	t.Logf("a server outside the sandbox: %s (TCP is open with LoopbackTCP under landlock)", got["host_port"])
}

// runProbe runs testdata/probe.py under r with a hidden file (also passed
// as fd 3), a hidden folder, a readable sibling and a TCP server outside.
// It returns the probe's findings and the path outside the run folder
// that it tried to write.
func runProbe(t *testing.T, r runner.Runner, loopbackTCP bool) (map[string]probeResult, string) {
	t.Helper()
	prog, err := filepath.Abs("testdata/probe.py")
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	data := t.TempDir()
	secretDir := filepath.Join(data, "val")
	for p, body := range map[string]string{
		filepath.Join(data, "val.bin"):     "VALIDATION-SECRET",
		filepath.Join(data, "train.bin"):   "training data",
		filepath.Join(secretDir, "00.bin"): "SHARD-SECRET",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fd3, err := os.Open(filepath.Join(data, "val.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd3.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	args, _ := json.Marshal(map[string]any{
		"host_udp": pc.LocalAddr().(*net.UDPAddr).Port,
		"outside":  outside, "hidden_file": filepath.Join(data, "val.bin"),
		"hidden_dir_file": filepath.Join(secretDir, "00.bin"), "sibling": filepath.Join(data, "train.bin"),
		"host_port": ln.Addr().(*net.TCPAddr).Port, "runner_pid": os.Getpid(),
	})
	job := runner.Job{
		Dir: t.TempDir(), Argv: []string{"python3", prog, string(args)}, Env: testEnv, Timeout: 30 * time.Second,
		Hidden: []string{filepath.Join(data, "val.bin"), secretDir}, ExtraFiles: []*os.File{fd3}, LoopbackTCP: loopbackTCP,
	}
	res, err := r.Run(context.Background(), job)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != runner.StatusOK {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Message, res.Stderr.String())
	}
	if sr, ok := r.(*Runner); ok && res.Sandbox != string(sr.Mode()) {
		t.Errorf("result says sandbox %q, want %q", res.Sandbox, sr.Mode())
	}
	got := map[string]probeResult{}
	if err := json.Unmarshal([]byte(res.Stdout.String()), &got); err != nil {
		t.Fatalf("probe output %q: %v", res.Stdout.String(), err)
	}
	// What the UDP server outside received, if anything.
	_ = pc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	buf := make([]byte, 16)
	if n, _, err := pc.ReadFrom(buf); err == nil {
		got["udp_received"] = probeResult{OK: string(buf[:n])}
	} else {
		got["udp_received"] = probeResult{Err: err.Error()}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		t.Logf("%-18s %s", k, got[k])
	}
	return got, outside
}
