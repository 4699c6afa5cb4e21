package redteam

import "embed"

// Programs are the red team's programs (testdata/NAME.py) and its track
// (testdata/track: a small GPT on the tiny corpus, with short limits), for
// other suites that run an attack end to end: the executor contract suite
// runs some of them on every executor.
//
//go:embed testdata/*.py testdata/track
var Programs embed.FS
