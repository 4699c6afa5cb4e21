package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// event is one line of go test -json (go doc test2json), with the build
// events of go test itself.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64 // seconds
	Output  string
	// ImportPath names the package of a build-output event; FailedBuild,
	// on a package's fail event, the package whose build failed.
	ImportPath  string
	FailedBuild string
}

// pkgState is a package whose tests run.
type pkgState struct {
	start time.Time
	// running are the tests started and not ended, with when they
	// started.
	running map[string]time.Time
	// output holds the lines of each test that has not passed (a passing
	// test's lines are dropped), and of the package itself under "".
	output map[string][]string
	// failed are the tests that failed, in the order they did.
	failed  []string
	skipped int
}

// testTime is a top-level test and how long it took.
type testTime struct {
	pkg, test string
	secs      float64
}

// summary follows the events of one go test run and writes what a person
// needs to see.
type summary struct {
	w io.Writer
	// module is the module's path, left out of the packages' names.
	module   string
	start    time.Time
	lastSaid time.Time
	now      func() time.Time

	pkgs   map[string]*pkgState
	builds map[string][]string // build output by import path

	ok, failed, noTests     int
	tests, skipped, flunked int
	times                   []testTime
	// failures are the failed tests that have no failed subtest, with
	// the first lines of why, for the end: a failure's full output can be
	// long (a table after the reason), and a reader of the tail alone
	// must still see which case failed and why.
	failures []failure
}

// failure is a failed test and the first lines of its own output.
type failure struct {
	pkg, test string
	why       []string
}

// whyLines and whyWidth bound what the end repeats of one failure.
const (
	whyLines = 6
	whyWidth = 240
)

// maxLines bounds what is kept of one test's output: a failure shows its
// last lines, which say why.
const maxLines = 2000

func newSummary(w io.Writer, start time.Time) *summary {
	return &summary{w: w, start: start, lastSaid: start, now: time.Now, pkgs: map[string]*pkgState{}, builds: map[string][]string{}}
}

// say writes a line that starts with the time since the run started.
func (s *summary) say(format string, args ...any) {
	now := s.now()
	fmt.Fprintf(s.w, "[%s] %s\n", clock(now.Sub(s.start)), fmt.Sprintf(format, args...))
	s.lastSaid = now
}

// clock writes d as minutes and seconds, like 12:03.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%2d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// name is a package's path within the module ("." for its root).
func (s *summary) name(pkg string) string {
	if s.module == "" {
		return pkg
	}
	if pkg == s.module {
		return "."
	}
	if rest, ok := strings.CutPrefix(pkg, s.module+"/"); ok {
		return rest
	}
	return pkg
}

func (s *summary) pkg(name string) *pkgState {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgState{start: s.now(), running: map[string]time.Time{}, output: map[string][]string{}}
		s.pkgs[name] = p
	}
	return p
}

func (s *summary) add(e event) {
	switch e.Action {
	case "build-output":
		s.builds[e.ImportPath] = appendLine(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		return
	}
	p := s.pkg(e.Package)
	switch e.Action {
	case "start":
		p.start = s.now()
	case "run":
		p.running[e.Test] = s.now()
	case "output":
		p.output[e.Test] = appendLine(p.output[e.Test], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.endPackage(e, p)
			return
		}
		s.endTest(e, p)
	}
}

func appendLine(lines []string, line string) []string {
	if len(lines) >= maxLines {
		lines = append(lines[:0], lines[len(lines)-maxLines/2:]...)
		lines[0] = "[... earlier lines left out]\n"
	}
	return append(lines, line)
}

func (s *summary) endTest(e event, p *pkgState) {
	delete(p.running, e.Test)
	top := !strings.Contains(e.Test, "/")
	switch e.Action {
	case "fail":
		p.failed = append(p.failed, e.Test)
		if top {
			s.flunked++
		}
		s.addFailure(e.Package, e.Test, p.output[e.Test])
	default:
		delete(p.output, e.Test)
	}
	if !top {
		return
	}
	s.tests++
	if e.Action == "skip" {
		s.skipped++
		p.skipped++
		return
	}
	s.times = append(s.times, testTime{e.Package, e.Test, e.Elapsed})
}

// addFailure keeps a failed test for the end, in place of the parent it
// belongs to: subtests fail before their parents, so a parent whose
// subtest is already kept adds nothing.
func (s *summary) addFailure(pkg, test string, output []string) {
	for _, f := range s.failures {
		if f.pkg == pkg && strings.HasPrefix(f.test, test+"/") {
			return
		}
	}
	var why []string
	for _, l := range output {
		l = strings.TrimSpace(l)
		// go test's own lines say nothing that the name does not.
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		if len(l) > whyWidth {
			l = l[:whyWidth] + " ..."
		}
		why = append(why, l)
		if len(why) == whyLines {
			break
		}
	}
	s.failures = append(s.failures, failure{pkg, test, why})
}

func (s *summary) endPackage(e event, p *pkgState) {
	delete(s.pkgs, e.Package)
	switch {
	case e.Action == "skip":
		s.noTests++ // no test files: nothing to say
		return
	case e.Action == "pass":
		s.ok++
		extra := ""
		if p.skipped > 0 {
			extra = fmt.Sprintf("  (%d skipped)", p.skipped)
		}
		s.say("ok    %-36s %7.1fs%s", s.name(e.Package), e.Elapsed, extra)
		return
	}
	s.failed++
	s.say("FAIL  %-36s %7.1fs", s.name(e.Package), e.Elapsed)
	// Every failure in full: the tests' output, then what the package
	// printed outside its tests (a panic, a timeout), then a failed
	// build's errors.
	for _, t := range p.failed {
		s.write(p.output[t])
	}
	s.write(p.output[""])
	if e.FailedBuild != "" {
		s.write(s.builds[e.FailedBuild])
	}
	fmt.Fprintln(s.w)
}

func (s *summary) write(lines []string) {
	for _, l := range lines {
		fmt.Fprint(s.w, "    ", l)
		if !strings.HasSuffix(l, "\n") {
			fmt.Fprintln(s.w)
		}
	}
}

// heartbeat says what still runs: the packages and, in each, the tests
// that run, longest first; before any package started, that go test still
// builds.
func (s *summary) heartbeat(now time.Time) {
	if len(s.pkgs) == 0 {
		s.say("still building the test binaries (%s so far)", now.Sub(s.start).Round(time.Second))
		return
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.pkgs)) {
		p := s.pkgs[name]
		part := fmt.Sprintf("%s %s", s.name(name), now.Sub(p.start).Round(time.Second))
		var tests []string
		for _, t := range slices.SortedFunc(maps.Keys(p.running), func(a, b string) int { return p.running[a].Compare(p.running[b]) }) {
			if !strings.Contains(t, "/") {
				tests = append(tests, fmt.Sprintf("%s %s", t, now.Sub(p.running[t]).Round(time.Second)))
			}
		}
		if len(tests) > 3 {
			tests = append(tests[:3], fmt.Sprintf("%d more", len(tests)-3))
		}
		if len(tests) > 0 {
			part += " (" + strings.Join(tests, ", ") + ")"
		}
		parts = append(parts, part)
	}
	s.say("still running: %s", strings.Join(parts, "; "))
}

// finish writes the counts, the slowest tests and the failures.
func (s *summary) finish(slowest int) {
	// Packages that never ended (go test was killed, or crashed).
	for _, name := range slices.Sorted(maps.Keys(s.pkgs)) {
		s.say("did not finish: %s", s.name(name))
		s.failed++
	}
	fmt.Fprintln(s.w)
	s.say("%d packages: %d ok, %d failed, %d without tests; %d tests, %d skipped, %d failed",
		s.ok+s.failed+s.noTests, s.ok, s.failed, s.noTests, s.tests, s.skipped, s.flunked)
	slices.SortStableFunc(s.times, func(a, b testTime) int {
		switch {
		case a.secs > b.secs:
			return -1
		case a.secs < b.secs:
			return 1
		}
		return 0
	})
	if n := min(slowest, len(s.times)); n > 0 {
		fmt.Fprintln(s.w, "slowest tests:")
		for _, t := range s.times[:n] {
			fmt.Fprintf(s.w, "  %7.1fs  %s %s\n", t.secs, s.name(t.pkg), t.test)
		}
	}
	if len(s.failures) > 0 {
		fmt.Fprintln(s.w, "failed (their output in full is above):")
		for _, f := range s.failures {
			fmt.Fprintf(s.w, "  %s %s\n", s.name(f.pkg), f.test)
			for _, l := range f.why {
				fmt.Fprintf(s.w, "      %s\n", l)
			}
		}
	}
}
