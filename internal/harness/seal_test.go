package harness

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sealScript runs frontier_wire.add_seals on a memory file whose fcntl
// answers EBUSY a given number of times, as the kernel does while its own
// memory scans hold the file's pages, and prints what came of it.
const sealScript = `
import errno, fcntl, os, sys
import frontier_wire
busy = int(sys.argv[1])
real = fcntl.fcntl
calls = []
def fake(fd, cmd, arg=0):
    if cmd == fcntl.F_ADD_SEALS:
        calls.append(arg)
        if len(calls) <= busy:
            raise OSError(errno.EBUSY, "Device or resource busy")
    return real(fd, cmd, arg)
fcntl.fcntl = fake
fd = os.memfd_create("x", os.MFD_ALLOW_SEALING)
os.write(fd, b"logits")
try:
    frontier_wire.add_seals(fd, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL, sleep=lambda s: None)
except OSError as e:
    print("error", e.errno == errno.EBUSY, len(calls))
    sys.exit(0)
sealed = real(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE != 0
print("sealed", sealed, len(calls))
`

// A seal the kernel refuses for a moment as busy is tried again, and never
// skipped: a file it stays busy for is an error.
func TestAddSealsRetriesBusy(t *testing.T) {
	py := pythonWithTorch(t)
	for _, c := range []struct {
		busy string
		want string
	}{
		{"0", "sealed True 1"},
		{"3", "sealed True 4"},
		{"100", "error True 12"},
	} {
		cmd := exec.Command(py, "-c", sealScript, c.busy)
		cmd.Env = append(cmd.Environ(), "PYTHONPATH="+filepath.Join("py"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("EBUSY %s times: %v\n%s", c.busy, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("EBUSY %s times: %q, want %q", c.busy, got, c.want)
		}
	}
}
