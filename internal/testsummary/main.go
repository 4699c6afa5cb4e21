// Command testsummary runs go test -json with the arguments it is given
// and tells a person waiting for it what happens: a line for each package
// as it finishes (in the order they finish, not the order of their names),
// a line every minute that says what still runs, every failure in full,
// and at the end the counts and the slowest tests. It exits as go test
// did. make test runs it:
//
//	go run ./internal/testsummary -- -p 2 -timeout 40m ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	goCmd := flag.String("go", "go", "the go command")
	every := flag.Duration("every", time.Minute, "say what still runs after this long without a line")
	slowest := flag.Int("slowest", 10, "list this many of the slowest tests at the end")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testsummary [-go GO] [-every D] [-slowest N] -- [go test flags] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(*goCmd, flag.Args(), os.Stdout, *every, *slowest))
}

// run runs go test -json args and summarizes it on w; it returns the exit
// code.
func run(goCmd string, args []string, w io.Writer, every time.Duration, slowest int) int {
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		return 1
	}
	// Ctrl-C reaches go test from the terminal too; SIGTERM sent to this
	// process alone is passed on. Either way the summary of what ran is
	// printed once go test has ended.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		return 1
	}
	go func() {
		for sig := range sigs {
			cmd.Process.Signal(sig)
		}
	}()

	s := newSummary(w, time.Now())
	s.module = modulePath("go.mod")
	s.say("go test %s: building first (a cold cache compiles every package, SQLite and the model SDKs among them: minutes on 2 cores)", strings.Join(args, " "))
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	tick := time.NewTicker(every / 4)
	defer tick.Stop()
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			var e event
			if json.Unmarshal(line, &e) != nil || e.Action == "" {
				fmt.Fprintf(w, "%s\n", line) // not an event: pass it on
				continue
			}
			s.add(e)
		case now := <-tick.C:
			if now.Sub(s.lastSaid) >= every {
				s.heartbeat(now)
			}
		}
	}
	err = cmd.Wait()
	s.finish(slowest)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return max(ee.ExitCode(), 1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		return 1
	case s.failed > 0:
		return 1
	}
	return 0
}

// modulePath reads the module's path from its go.mod, so that packages are
// named within it (cmd/frontier); "" when there is none.
func modulePath(gomod string) string {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
