package sandbox

import (
	"encoding/json"
	"fmt"
)

// HelperCommand is the name of the hidden subcommand that runs [Helper].
const HelperCommand = "sandbox-exec"

// Exit codes of the helper when it cannot execute the program, as a shell
// would use them.
const (
	exitSetup        = 125 // the sandbox could not be set up
	exitCannotExec   = 126 // the program exists but could not be executed
	exitNotFound     = 127 // the program does not exist
	statusErrPrefix  = "error: "
	statusOKPrefix   = "ok: "
	statusDiskPrefix = "disk full: "
)

// policy is what the helper is asked to do before it executes the program.
// It travels as JSON on the helper's command line.
type policy struct {
	// StatusFD is an inherited descriptor on which the helper reports a
	// failure ("error: ...") or, with Landlock, success ("ok: ...").
	// Unless PassStatusFD is set it is closed when the program starts,
	// so the program never sees it.
	StatusFD     int  `json:"status_fd,omitempty"`
	PassStatusFD bool `json:"pass_status_fd,omitempty"`

	// SIGTERM is "ignore" (outside bubblewrap, which must survive the
	// runner's SIGTERM) or "default" (inside, for the program).
	SIGTERM string `json:"sigterm,omitempty"`

	Landlock *landlockPolicy `json:"landlock,omitempty"`

	// Reap, when set, makes the helper run the program as its child
	// instead of becoming it: the helper is a child subreaper, so every
	// process the program leaves behind (a daemon that double-forked and
	// left the session included) becomes the helper's child when its parent
	// exits, and the helper kills them all once the program has exited,
	// then exits as the program did. Files is how many descriptors from 3 on
	// the program inherits (the job's ExtraFiles).
	Reap  bool `json:"reap,omitempty"`
	Files int  `json:"files,omitempty"`
}

// landlockPolicy is the file and network policy applied with Landlock.
type landlockPolicy struct {
	Write   []string `json:"write,omitempty"`   // read and write (the run folder, Writable)
	Hide    []string `json:"hide,omitempty"`    // not readable
	Read    []string `json:"read,omitempty"`    // readable again inside a hidden path
	Devices []string `json:"devices,omitempty"` // read, write and ioctl (GPUs)
	DenyTCP bool     `json:"deny_tcp,omitempty"`
	// NoShm leaves the host's /dev/shm out of reach: a scorer must not
	// read what the program it scores left there.
	NoShm bool `json:"no_shm,omitempty"`
}

// helperArgs is the command line that runs argv under p: the helper's own
// prefix, then "--policy", the JSON, "--" and argv.
func helperArgs(prefix []string, p policy, argv []string) ([]string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode sandbox policy: %w", err)
	}
	out := append([]string(nil), prefix...)
	out = append(out, "--policy", string(b), "--")
	return append(out, argv...), nil
}
