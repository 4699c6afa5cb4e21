// Package search holds the parts every search of frontier shares, the
// evolutionary engine (internal/evolve) and the benchmark's scaffolds
// (internal/bench/scaffold) alike: a model client that records every
// call before it is sent and after it answers (Recorder), the request
// to drain that a signal makes and the search's loop reads (Drain), and
// the adoption of an evaluation that finished before a restart but whose
// result its search never recorded (Adopt). What a search decides stays
// with it; these are the parts whose behaviour must not differ between
// two searches.
package search
