//go:build unix && !linux

package sandbox

import "errors"

var errNoLandlock = errors.New("Landlock is a Linux feature")

func landlockABI() (int, error) { return 0, errNoLandlock }

func applyLandlock(landlockPolicy) (string, error) { return "", errNoLandlock }
