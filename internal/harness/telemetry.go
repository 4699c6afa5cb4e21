package harness

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Limits of ReadTelemetry. A run's telemetry is written by code that
// shares a process with the program under test, so the reader must not
// trust its size.
const (
	MaxLineBytes = 1 << 20  // longer lines are skipped
	MaxRawBytes  = 64 << 20 // raw lines kept for storage; later lines are still read
)

// Telemetry is a run's telemetry file, aggregated.
type Telemetry struct {
	RunStart *RunStart
	Steps    []Step
	Vals     []Val
	Sections []Section // the last sections event
	TopOps   *TopOps   // the last top_ops event
	Memory   *Memory
	Probe    *Probe
	Checks   *Checks
	Warnings []Warning
	// Error is the first error event: the cause when several processes
	// failed one after the other. Errors holds them all.
	Error  *Error
	Errors []Error
	// Final is the first final event; nil when the run did not reach
	// finish(). Finals counts final events (more than one is suspicious).
	Final  *Final
	Finals int

	// Lines are the raw JSON lines kept for storage, in file order, up to
	// MaxRawBytes in all; RawDropped counts the valid lines not kept.
	Lines      []json.RawMessage
	RawDropped int
	// Skipped counts lines that were not JSON objects with an "event", or
	// whose fields did not decode; TooLong counts lines over MaxLineBytes.
	Skipped int
	TooLong int
	// Unknown counts well-formed events of kinds this version does not
	// know (kept in Lines).
	Unknown int

	// With a key (ReadAuthenticated): Authentic counts lines whose MAC
	// holds; Forged counts lines without a valid one (not decoded: they
	// decide nothing); Gaps counts missing sequence numbers, lines the
	// harness wrote that are no longer there.
	Authentic int
	Forged    int
	Gaps      int

	rawBytes int
	key      []byte
	nextSeq  map[int]int64 // per rank
	setup    []json.RawMessage
}

// FinalVal is the validation run by finish(), or nil.
func (t *Telemetry) FinalVal() *Val {
	for i := len(t.Vals) - 1; i >= 0; i-- {
		if t.Vals[i].Final {
			return &t.Vals[i]
		}
	}
	return nil
}

// ReadTelemetry reads a telemetry file. Malformed and oversized lines are
// counted and skipped, never fatal: the error is only for a failing reader.
// Whatever was read before such an error is returned with it.
func ReadTelemetry(r io.Reader) (*Telemetry, error) {
	return read(r, &Telemetry{})
}

// ReadAuthenticated reads a telemetry file whose harness was given key
// (Config.KeyFD): only lines that carry a valid MAC count. The program
// shares the harness's process and its run folder, so it can append to
// the file or rewrite it; without the key, which the harness read and
// closed before the program started, it cannot write a line that counts.
//
// When no line is authentic the harness never started (torch missing, a
// broken config): then the error events that frontier_boot writes without
// the key are kept, and nothing else.
func ReadAuthenticated(r io.Reader, key []byte) (*Telemetry, error) {
	t, err := read(r, &Telemetry{key: key, nextSeq: map[int]int64{}})
	if t.Authentic == 0 {
		for _, line := range t.setup {
			var head struct {
				Event string `json:"event"`
			}
			if json.Unmarshal(line, &head) == nil && head.Event == EventError {
				t.Forged--
				t.decodeKept(head.Event, line)
			}
		}
	}
	t.setup = nil
	return t, err
}

func read(r io.Reader, t *Telemetry) (*Telemetry, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > MaxLineBytes {
				tooLong = true
				line = line[:0]
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			t.TooLong++
		} else {
			t.add(line)
		}
		line, tooLong = line[:0], false
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return t, fmt.Errorf("read telemetry: %w", err)
		}
	}
}

// add decodes one line into t.
func (t *Telemetry) add(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var head struct {
		Event string `json:"event"`
	}
	if line[0] != '{' || json.Unmarshal(line, &head) != nil || head.Event == "" {
		t.Skipped++
		return
	}
	if t.key != nil && !t.authenticate(line) {
		t.Forged++
		if len(t.setup) < 16 {
			t.setup = append(t.setup, json.RawMessage(bytes.Clone(line)))
		}
		return
	}
	t.decodeKept(head.Event, line)
}

// decodeKept decodes a line and keeps its raw form.
func (t *Telemetry) decodeKept(kind string, line []byte) {
	if err := t.decode(kind, line); err != nil {
		t.Skipped++
		return
	}
	if t.rawBytes+len(line) > MaxRawBytes {
		t.RawDropped++
		return
	}
	t.rawBytes += len(line)
	t.Lines = append(t.Lines, json.RawMessage(bytes.Clone(line)))
}

// An authenticated line ends with ,"mac":"<64 hex digits>"}: HMAC-SHA256
// under the run's key of the line as it was before the field was added
// (the same bytes with "}" in place of the suffix).
const (
	macPrefix = `,"mac":"`
	macLen    = 64
)

// authenticate checks a line's MAC and its sequence number: each process
// numbers its lines 0, 1, 2, ... ("seq", per "rank"), so a line removed
// from the middle of the file leaves a gap and a copied line is refused.
func (t *Telemetry) authenticate(line []byte) bool {
	n := len(macPrefix) + macLen + 2
	if len(line) < n+2 || !bytes.HasSuffix(line, []byte(`"}`)) || !bytes.HasPrefix(line[len(line)-n:], []byte(macPrefix)) {
		return false
	}
	got, err := hex.DecodeString(string(line[len(line)-macLen-2 : len(line)-2]))
	if err != nil {
		return false
	}
	body := append(bytes.Clone(line[:len(line)-n]), '}')
	m := hmac.New(sha256.New, t.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), got) {
		return false
	}
	var id struct {
		Seq  *int64 `json:"seq"`
		Rank int    `json:"rank"`
	}
	if json.Unmarshal(body, &id) != nil || id.Seq == nil {
		return false
	}
	want := t.nextSeq[id.Rank]
	if *id.Seq < want {
		return false // a copy of an earlier line
	}
	t.Gaps += int(*id.Seq - want)
	t.nextSeq[id.Rank] = *id.Seq + 1
	t.Authentic++
	return true
}

func (t *Telemetry) decode(kind string, line []byte) error {
	switch kind {
	case EventRunStart:
		var v RunStart
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		if t.RunStart == nil {
			t.RunStart = &v
		}
	case EventStep:
		var v Step
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Steps = append(t.Steps, v)
	case EventVal:
		var v Val
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Vals = append(t.Vals, v)
	case EventSections:
		var v Sections
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Sections = v.Sections
	case EventTopOps:
		var v TopOps
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.TopOps = &v
	case EventMemory:
		var v Memory
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Memory = &v
	case EventProbe:
		var v Probe
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Probe = &v
	case EventChecks:
		var v Checks
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Checks = &v
	case EventWarning:
		var v Warning
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Warnings = append(t.Warnings, v)
	case EventError:
		var v Error
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Errors = append(t.Errors, v)
		if t.Error == nil {
			first := v
			t.Error = &first
		}
	case EventFinal:
		var v Final
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Finals++
		if t.Final == nil {
			t.Final = &v
		}
	default:
		t.Unknown++
	}
	return nil
}
