package slurm

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Spec is one job to submit: what runs, where, and with what resources.
type Spec struct {
	// Name identifies the job among its user's jobs, across processes:
	// Run submits attempt n as Name.n and finds the attempts again by it,
	// so it must be unique to what it runs (the evaluation and phase).
	// Letters, digits, '.', '_' and '-', at most 100 of them.
	Name string
	// Comment is what squeue and scontrol show of the job beside its name
	// (--comment): which run and evaluation it is, for a person. Printable
	// ASCII without quotes or backslashes, at most 250 characters.
	Comment string

	// Argv is the command; Argv[0] is an absolute path on the node. The
	// batch script execs it, so its exit status is the job's.
	Argv []string
	// Dir is the working directory on the node (--chdir); it must exist
	// there, which on a cluster means a shared file system.
	Dir string
	// Env is the environment of the command besides what sbatch passes
	// (see the package doc), as KEY=VALUE. It is written into the batch
	// script, which slurmctld keeps and administrators can read: never a
	// secret.
	Env []string
	// Output is the file that receives the job's stdout and stderr and
	// Slurm's own messages about it (a memory limit, a time limit).
	// Default: Dir/slurm-%j.out, %j being the job's ID.
	Output string

	CPUs int // --cpus-per-task; 0 means 1
	GPUs int // --gres=gpu:N (gpu:GPUType:N); 0 means none
	// Memory is the memory of the job in bytes (--mem, rounded up to
	// MiB); 0 leaves it to the partition's default.
	Memory int64
	// TimeLimit is the job's wall-clock limit (--time). Slurm counts whole
	// minutes, so it is rounded up to one; 0 leaves it to the partition.
	TimeLimit time.Duration

	// Where the job runs and who pays for it; empty leaves each to the
	// cluster's defaults (see Config).
	Partition  string
	Account    string
	QoS        string
	Constraint string
	GPUType    string
	// Directives are more sbatch options, one "--option=value" each, for
	// what Spec has no field for (--reservation, --exclusive, --nice).
	Directives []string
}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	wordRE   = regexp.MustCompile(`^[A-Za-z0-9._:,|&!()\[\]*@/+-]+$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ownOptions are the sbatch options Script writes itself: a directive
// that sets one again would change what Run relies on (the name it finds
// jobs by, the output it reads, requeueing, the environment).
var ownOptions = []string{
	"--job-name", "-J", "--comment", "--chdir", "-D", "--output", "-o", "--error", "-e",
	"--export", "--export-file", "--requeue", "--no-requeue", "--parsable", "--wrap", "--array", "-a",
	"--nodes", "-N", "--ntasks", "-n", "--cpus-per-task", "-c", "--mem", "--gres", "--gpus", "-G",
	"--time", "-t", "--partition", "-p", "--account", "-A", "--qos", "-q", "--constraint", "-C",
	"--get-user-env", "--hold", "-H", "--wait", "-W",
}

// CheckValue says what is wrong with the value of a partition, account,
// QoS, constraint or GPU type, or nil; "" is none.
func CheckValue(v string) error {
	if v != "" && !wordRE.MatchString(v) {
		return fmt.Errorf("%q: use letters, digits and Slurm's operators (,|&!()[]*:), no spaces or quotes", v)
	}
	return nil
}

// CheckDirective says what is wrong with one extra sbatch option, or nil.
func CheckDirective(d string) error {
	if !strings.HasPrefix(d, "--") || len(d) < 3 {
		return fmt.Errorf("%q: write an sbatch option as --option or --option=value", d)
	}
	if strings.ContainsAny(d, "\n\r\x00#") {
		return fmt.Errorf("%q: an option holds no newline, NUL or '#'", d)
	}
	opt, _, _ := strings.Cut(d, "=")
	opt, _, _ = strings.Cut(opt, " ")
	for _, o := range ownOptions {
		if opt == o {
			return fmt.Errorf("%q: frontier sets %s itself (from the track, or with its own key in the slurm section)", d, o)
		}
	}
	return nil
}

// check says every problem of the spec, each naming its field.
func (s *Spec) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !nameRE.MatchString(s.Name) {
		bad("name %q: use 1 to 100 letters, digits, '.', '_' or '-'", s.Name)
	}
	if len(s.Comment) > 250 || strings.ContainsFunc(s.Comment, func(r rune) bool {
		return r < ' ' || r > '~' || r == '"' || r == '\'' || r == '\\'
	}) {
		bad("comment %q: use at most 250 printable ASCII characters, without quotes or backslashes", s.Comment)
	}
	switch {
	case len(s.Argv) == 0:
		bad("argv is empty: name the command to run")
	case !filepath.IsAbs(s.Argv[0]):
		bad("argv[0] %q is not an absolute path: the node's PATH is not the submitter's", s.Argv[0])
	}
	for i, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			bad("argv[%d] holds a NUL byte", i)
		}
	}
	if !filepath.IsAbs(s.Dir) {
		bad("dir %q is not an absolute path", s.Dir)
	}
	if s.Output != "" && !filepath.IsAbs(s.Output) {
		bad("output %q is not an absolute path", s.Output)
	}
	for _, p := range []struct{ key, v string }{{"dir", s.Dir}, {"output", s.Output}} {
		if strings.ContainsAny(p.v, "\n\r\x00\"") {
			bad("%s %q holds a newline, a NUL or a double quote", p.key, p.v)
		}
	}
	for _, kv := range s.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !envKeyRE.MatchString(k) || strings.ContainsRune(v, 0) {
			bad("env %q: write KEY=VALUE, KEY a shell variable name", kv)
		}
	}
	if s.CPUs < 0 || s.GPUs < 0 || s.Memory < 0 || s.TimeLimit < 0 {
		bad("cpus %d, gpus %d, memory %d, time limit %v: none may be negative", s.CPUs, s.GPUs, s.Memory, s.TimeLimit)
	}
	for _, w := range []struct{ key, v string }{
		{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QoS},
		{"constraint", s.Constraint}, {"gpu type", s.GPUType},
	} {
		if err := CheckValue(w.v); err != nil {
			bad("%s %w", w.key, err)
		}
	}
	for _, d := range s.Directives {
		if err := CheckDirective(d); err != nil {
			bad("directive %w", err)
		}
	}
	return errors.Join(errs...)
}

// Script returns the batch script of the spec: its options as #SBATCH
// lines, its environment as exports, and an exec of its command. It is
// what Submit sends to sbatch, and a person can read it or submit it by
// hand.
func Script(s Spec) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("job spec %s: %w", s.Name, err)
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	opt := func(name, value string) {
		if value == "" {
			fmt.Fprintf(&b, "#SBATCH --%s\n", name)
			return
		}
		fmt.Fprintf(&b, "#SBATCH --%s=%s\n", name, value)
	}
	out := s.Output
	if out == "" {
		out = filepath.Join(s.Dir, "slurm-%j.out")
	}
	opt("job-name", s.Name)
	if s.Comment != "" {
		opt("comment", `"`+s.Comment+`"`)
	}
	opt("chdir", quoteDirective(s.Dir))
	opt("output", quoteDirective(out))
	opt("error", quoteDirective(out))
	opt("export", "ALL")
	opt("no-requeue", "")
	opt("nodes", "1")
	opt("ntasks", "1")
	opt("cpus-per-task", strconv.Itoa(max(s.CPUs, 1)))
	if s.Memory > 0 {
		opt("mem", strconv.FormatInt((s.Memory+1<<20-1)>>20, 10)+"M")
	}
	if s.GPUs > 0 {
		g := "gpu:"
		if s.GPUType != "" {
			g += s.GPUType + ":"
		}
		opt("gres", g+strconv.Itoa(s.GPUs))
	}
	if s.TimeLimit > 0 {
		opt("time", strconv.FormatInt(int64((s.TimeLimit+time.Minute-1)/time.Minute), 10))
	}
	for _, o := range []struct{ name, v string }{
		{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QoS}, {"constraint", s.Constraint},
	} {
		if o.v != "" {
			opt(o.name, o.v)
		}
	}
	for _, d := range s.Directives {
		fmt.Fprintf(&b, "#SBATCH %s\n", d)
	}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	b.WriteString("exec")
	for _, a := range s.Argv {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return []byte(b.String()), nil
}

// quoteDirective quotes a path for an #SBATCH line when it has spaces:
// sbatch splits a directive's line at white space outside double quotes.
func quoteDirective(p string) string {
	if strings.ContainsAny(p, " \t'") {
		return `"` + p + `"`
	}
	return p
}

// shellQuote quotes s for sh: single quotes, each inner one written '\”.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// attemptName is the job name of attempt n of a spec.
func attemptName(name string, n int) string { return name + "." + strconv.Itoa(n) }

// attemptOf says which attempt of name a job called job is, or 0 when the
// job is not one of name's.
func attemptOf(name, job string) int {
	rest, ok := strings.CutPrefix(job, name+".")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0
	}
	return n
}
