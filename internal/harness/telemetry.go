package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Limits of ReadTelemetry. The judge caps what the program reports, but
// the reader does not rely on it.
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
	// Handoff says the judge finished the final validation's scored pass
	// and waited for the scorer.
	Handoff bool
	// Clock are the judge's clock marks, in order.
	Clock []ClockMark

	// Lines are the raw JSON lines kept for storage, in file order, up to
	// MaxRawBytes in all; RawDropped counts the valid lines not kept.
	Lines      []json.RawMessage
	RawDropped int
	// Skipped counts lines that were not JSON objects with an "event", or
	// whose fields did not decode; TooLong counts lines over MaxLineBytes.
	Skipped int
	TooLong int
	// Unknown counts well-formed events of kinds this version does not
	// know (kept in Lines). Misattributed counts events the program
	// reported of kinds only the judge writes (dropped).
	Unknown       int
	Misattributed int

	rawBytes int
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
		Event  string `json:"event"`
		Source string `json:"source"`
	}
	if line[0] != '{' || json.Unmarshal(line, &head) != nil || head.Event == "" {
		t.Skipped++
		return
	}
	if head.Source == SourceProgram && !programKind(head.Event) {
		// What the program reports is telemetry, never a result: an event
		// of a kind that decides a verdict, said to be the program's, is
		// not believed (the judge never writes one).
		t.Misattributed++
		return
	}
	t.decodeKept(head.Event, line)
}

// SourceProgram marks the events the program reported itself (advisory).
const SourceProgram = "program"

// programKind reports whether a program may report events of this kind.
func programKind(kind string) bool {
	switch kind {
	case EventRunStart, EventSections, EventTopOps, EventMemory, EventWarning:
		return true
	}
	return false
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
	case EventHandoff:
		t.Handoff = true
	case EventClock:
		var v ClockMark
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		t.Clock = append(t.Clock, v)
	default:
		t.Unknown++
	}
	return nil
}
