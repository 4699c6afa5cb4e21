// Package runview is the one read model of what the store holds about a
// search: a run's summary (what `frontier runs show` prints), one member's
// story (`frontier runs child`), the static report's data, the bench runs'
// scores, an evaluation, and the change feed that keeps a watcher up to
// date. The CLI, the report, the benchmark's report and the dashboard all
// read through it, so that they can never disagree: each value is computed
// here once and rendered there.
//
// It reads the store only, through the few methods each view needs (small
// interfaces declared here), and never the engine: what it needs of a
// run's configuration it decodes from the stored JSON itself (Settings).
// Its JSON shapes (json.go) are those of the CLI's --json and of the
// dashboard's API.
package runview
