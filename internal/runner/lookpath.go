package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LookPath resolves job.Argv[0] as the local runner does: a name without a
// slash is searched in the PATH of job.Env, not the runner's (whose PATH is
// used only when job.Env has none), so that what runs does not depend on
// who started the runner; a relative path is relative to job.Dir; relative
// PATH entries too. Wrappers that prefix Argv (a sandbox) call it first to
// report a missing program as StatusNoStart rather than as the wrapper's
// own failure.
func LookPath(job Job) (string, error) {
	if len(job.Argv) == 0 || job.Argv[0] == "" {
		return "", errors.New("empty command line (Job.Argv)")
	}
	name := job.Argv[0]
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(job.Dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("executable %q: %w", name, err)
		}
		return p, nil
	}
	list, ok := lookupEnv(job.Env, "PATH")
	where := "the job's PATH"
	if !ok {
		list = os.Getenv("PATH")
		where = "the runner's PATH (the job's environment has none)"
	}
	for _, dir := range filepath.SplitList(list) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(job.Dir, dir)
		}
		p := filepath.Join(dir, name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in %s %q; install it, add its folder to PATH or give its full path", name, where, list)
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist", p)
		}
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable (mode %v)", p, fi.Mode().Perm())
	}
	return nil
}

// lookupEnv returns the last value of key in env, as the program sees it.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
