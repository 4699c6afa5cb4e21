package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScript(t *testing.T) {
	s := Spec{
		Name: "frontier-e1-fast.1", Comment: "frontier run=r1 eval=e1 phase=fast",
		Argv: []string{"/usr/bin/frontier", "node-phase", "--dir", "/shared/runs/x y", "it's"},
		Dir:  "/shared/runs/x y", Env: []string{"A=1", "B=two words"},
		CPUs: 8, GPUs: 2, GPUType: "h100", Memory: 3<<30 + 1, TimeLimit: 61 * time.Second,
		Partition: "gpu", Account: "acct", QoS: "normal", Constraint: "h100&ib",
		Directives: []string{"--reservation=speedrun", "--exclusive"},
	}
	b, err := Script(s)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"#!/bin/sh\n",
		"#SBATCH --job-name=frontier-e1-fast.1\n",
		`#SBATCH --comment="frontier run=r1 eval=e1 phase=fast"` + "\n",
		`#SBATCH --chdir="/shared/runs/x y"` + "\n",
		`#SBATCH --output="/shared/runs/x y/slurm-%j.out"` + "\n",
		"#SBATCH --export=ALL\n",
		"#SBATCH --no-requeue\n",
		"#SBATCH --cpus-per-task=8\n",
		"#SBATCH --mem=3073M\n", // rounded up to MiB
		"#SBATCH --gres=gpu:h100:2\n",
		"#SBATCH --time=2\n", // rounded up to minutes
		"#SBATCH --partition=gpu\n#SBATCH --account=acct\n#SBATCH --qos=normal\n#SBATCH --constraint=h100&ib\n",
		"#SBATCH --reservation=speedrun\n#SBATCH --exclusive\n",
		"export A=1\nexport B='two words'\n",
		`exec /usr/bin/frontier node-phase --dir '/shared/runs/x y' 'it'\''s'` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the script lacks %q:\n%s", want, got)
		}
	}
	// The directives come before the first command: sbatch reads none
	// after it.
	if i, j := strings.LastIndex(got, "#SBATCH"), strings.Index(got, "export "); i > j {
		t.Errorf("an #SBATCH line follows a command:\n%s", got)
	}
}

// The script runs its command with the arguments and environment as
// given, whatever characters they hold: sh reads it as Slurm would.
func TestScriptRunsCommand(t *testing.T) {
	dir := t.TempDir()
	args := []string{"plain", "two words", "it's", `"quoted" $HOME \back`, "", "*"}
	s := Spec{Name: "x", Argv: append([]string{"/bin/sh", "-c", `printf '%s\n' "$@" "$V"`, "sh"}, args...),
		Dir: dir, Env: []string{"V=$(date) 'x'"}}
	b, err := Script(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(path, b, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/bin/sh", path).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	want := strings.Join(append(args, "$(date) 'x'"), "\n") + "\n"
	if string(out) != want {
		t.Errorf("the command printed\n%q\nwant\n%q", out, want)
	}
}

func TestScriptRefusesBadSpecs(t *testing.T) {
	ok := Spec{Name: "a", Argv: []string{"/bin/true"}, Dir: "/tmp"}
	cases := map[string]func(*Spec){
		"name":                      func(s *Spec) { s.Name = "a b" },
		"comment":                   func(s *Spec) { s.Comment = `say "hi"` },
		"argv is empty":             func(s *Spec) { s.Argv = nil },
		"not an absolute":           func(s *Spec) { s.Argv = []string{"true"} },
		"dir":                       func(s *Spec) { s.Dir = "relative" },
		"env":                       func(s *Spec) { s.Env = []string{"1A=x"} },
		"negative":                  func(s *Spec) { s.CPUs = -1 },
		"partition":                 func(s *Spec) { s.Partition = "gpu; rm -rf /" },
		"frontier sets --job":       func(s *Spec) { s.Directives = []string{"--job-name=other"} },
		"--option=value":            func(s *Spec) { s.Directives = []string{"exclusive"} },
		"newline":                   func(s *Spec) { s.Directives = []string{"--x=1\n#SBATCH --y"} },
		"frontier sets --partition": func(s *Spec) { s.Directives = []string{"--partition=gpu"} },
	}
	if _, err := Script(ok); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	for want, change := range cases {
		s := ok
		change(&s)
		if _, err := Script(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v", want, err)
		}
	}
}

func TestAttemptOf(t *testing.T) {
	for job, want := range map[string]int{
		"e1-fast.1": 1, "e1-fast.2": 2, "e1-fast.12": 12,
		"e1-fast": 0, "e1-fast.": 0, "e1-fast.0": 0, "e1-fast.01": 0, "e1-fast.x": 0, "e1-fast.1.1": 0, "e1-fastx.1": 0,
	} {
		if got := attemptOf("e1-fast", job); got != want {
			t.Errorf("attemptOf(e1-fast, %q) = %d, want %d", job, got, want)
		}
	}
}
