// Package tracks embeds the built-in track folders: each holds track.yaml,
// the reference program and a README with the track's calibration.
package tracks

import "embed"

// FS holds one folder per built-in track.
//
//go:embed all:tiny all:tiny-1cpu all:nanogpt all:nanogpt-1gpu all:nanogpt-medium
var FS embed.FS
