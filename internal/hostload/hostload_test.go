package hostload

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeProc writes a folder laid out like /proc.
func fakeProc(t *testing.T, files map[string]string) Dir {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Dir(dir)
}

const stat0 = `cpu  1000 50 300 9000 100 10 20 5 0 0
cpu0 500 25 150 4500 50 5 10 3 0 0
cpu1 500 25 150 4500 50 5 10 2 0 0
intr 12345
`

// busy: 1000+50+300+10+20 = 1380 ticks, steal 5; a second later 400 more
// busy ticks (4 s) and 30 more stolen.
const stat1 = `cpu  1300 50 380 9100 100 10 40 35 0 0
cpu0 650 25 190 4550 50 5 20 18 0 0
cpu1 650 25 190 4550 50 5 20 17 0 0
`

func TestReadAndBetween(t *testing.T) {
	d0 := fakeProc(t, map[string]string{"loadavg": "2.50 1.75 0.90 3/467 1234\n", "stat": stat0})
	d1 := fakeProc(t, map[string]string{"loadavg": "3.00 2.00 1.00 3/467 1234\n", "stat": stat1})
	s0, s1 := d0.Read(), d1.Read()
	if !s0.OK || s0.CPUs != 2 || s0.Busy != 13800*time.Millisecond || s0.Steal != 50*time.Millisecond {
		t.Fatalf("sample %+v: want busy 13.8s, steal 50ms, 2 CPUs", s0)
	}
	if len(s0.LoadAvg) != 3 || s0.LoadAvg[0] != 2.5 || s0.LoadAvg[2] != 0.9 {
		t.Fatalf("load average %v", s0.LoadAvg)
	}
	s1.At = s0.At.Add(2 * time.Second)
	// The job took 2.5 s of the 4 s the machine was busy.
	u, ok := Between(s0, s1, 2500*time.Millisecond)
	if !ok || u.Others != 1500*time.Millisecond || u.Steal != 300*time.Millisecond || u.Wall != 2*time.Second || u.CPUs != 2 {
		t.Fatalf("use %+v, %v: want others 1.5s, steal 300ms over 2s", u, ok)
	}
	// The job's own time read a moment later than the machine's never
	// makes others negative.
	if u, _ := Between(s0, s1, 5*time.Second); u.Others != 0 {
		t.Errorf("others %v with the job above the machine's busy time: want 0", u.Others)
	}
}

func TestReadMissingOrMalformed(t *testing.T) {
	cases := map[string]map[string]string{
		"nothing":        {},
		"short stat":     {"stat": "cpu 1 2 3\n", "loadavg": "x y z\n"},
		"negative ticks": {"stat": "cpu  -1 0 0 0 0 0 0 0\n", "loadavg": "1 2\n"},
	}
	for name, files := range cases {
		s := fakeProc(t, files).Read()
		if s.OK || s.LoadAvg != nil {
			t.Errorf("%s: sample %+v: want nothing read", name, s)
		}
		if _, ok := Between(s, s, 0); ok {
			t.Errorf("%s: Between of unread samples is ok", name)
		}
	}
}

func TestProcessCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 150, stime 50,
	// cutime 30, cstime 20 ticks: 2.5 s.
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 30 20 20 0 3 0 12345 1000 100\n"
	d := fakeProc(t, map[string]string{"4242/stat": line, "7/stat": "7 (x) S 1\n"})
	got, err := d.ProcessCPU(4242)
	if err != nil || got != 2500*time.Millisecond {
		t.Fatalf("ProcessCPU = %v, %v: want 2.5s", got, err)
	}
	if _, err := d.ProcessCPU(7); err == nil {
		t.Error("a truncated stat line read without error")
	}
	if _, err := d.ProcessCPU(8); err == nil {
		t.Error("a missing process read without error")
	}
	// This process has used some CPU time by now.
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
}
