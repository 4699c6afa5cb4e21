// Package suites embeds the built-in suites of the reproduction benchmark
// (frontier bench): each folder holds suite.yaml, the records' programs,
// the hints and the ground-truth diffs, and a README with the records'
// measured figures.
package suites

import "embed"

// FS holds one folder per built-in suite.
//
//go:embed all:tiny-ladder
var FS embed.FS
