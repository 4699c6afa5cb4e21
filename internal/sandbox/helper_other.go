//go:build !unix

package sandbox

import (
	"errors"
	"fmt"
	"io"
)

// Helper reports that sandboxing needs Linux.
func Helper(args []string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "frontier %s: %v\n", HelperCommand, errors.New("sandboxing needs Linux"))
	return exitSetup
}

func landlockABI() (int, error) { return 0, errors.New("Landlock is a Linux feature") }
