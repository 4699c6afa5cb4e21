//go:build unix && !linux

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// reap executes the program in place where there are no child subreapers:
// the runner's own scan is all there is.
func reap(argv []string, _ int) (int, error) {
	err := syscall.Exec(argv[0], argv, os.Environ())
	if errors.Is(err, syscall.ENOENT) {
		return exitNotFound, err
	}
	return exitCannotExec, err
}
