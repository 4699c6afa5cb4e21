package importer

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Separator is the line of 100 '=' that a speedrun log puts after the
// program's source (and, in 2024 logs, before it too).
var Separator = strings.Repeat("=", 100)

// ExtractCode returns the program held by a record log: everything before
// the first separator line, or, when the log begins with a separator (the
// 2024 layout), everything between the first two. A file without a
// separator is taken to be the script itself (fromLog false).
func ExtractCode(src []byte) (code []byte, fromLog bool, err error) {
	if len(bytes.TrimSpace(src)) == 0 {
		return nil, false, errors.New("the file is empty: give a speedrun training script or a record log")
	}
	var seps []int // byte offsets of separator lines' starts, and their ends
	var ends []int
	for off := 0; off < len(src); {
		nl := bytes.IndexByte(src[off:], '\n')
		end := len(src)
		if nl >= 0 {
			end = off + nl + 1
		}
		if isSeparator(src[off:end]) {
			seps = append(seps, off)
			ends = append(ends, end)
			if len(seps) == 2 {
				break
			}
		}
		off = end
	}
	switch {
	case len(seps) == 0:
		code = src
	case seps[0] > 0:
		code, fromLog = src[:seps[0]], true
	case len(seps) == 2:
		code, fromLog = src[ends[0]:seps[1]], true
	default:
		return nil, true, errors.New("the log begins with a separator line of 100 '=' but has no second one: the program's source is not delimited")
	}
	if len(bytes.TrimSpace(code)) == 0 {
		return nil, fromLog, errors.New("the log holds no program before its separator line of 100 '='")
	}
	return code, fromLog, nil
}

func isSeparator(l []byte) bool {
	return string(bytes.TrimRight(l, " \t\r\n")) == Separator
}

// Log is what a speedrun run printed: its step lines, validation lines and
// peak memory. Fields the run did not print stay zero.
type Log struct {
	Train []TrainLine
	Vals  []ValLine
	// PeakAllocatedMiB and PeakReservedMiB are CUDA peak memory from the
	// "peak memory allocated: A MiB reserved: R MiB" line (older scripts:
	// "peak memory consumption: A MiB").
	PeakAllocatedMiB float64
	PeakReservedMiB  float64
	// Injected holds the payloads of the InjectedPrefix lines.
	Injected []string
	// TooLong counts lines skipped for length.
	TooLong int
}

// TrainLine is "step:N/T [train_loss:L] train_time:Xms step_avg:Yms": N
// steps done of T.
type TrainLine struct {
	Step, Total int
	TrainTimeMs float64
	StepAvgMs   float64
	TrainLoss   *float64
}

// ValLine is "step:N/T val_loss:L train_time:Xms step_avg:Yms": the
// validation after N steps of T.
type ValLine struct {
	Step, Total int
	ValLoss     float64
	TrainTimeMs float64
	StepAvgMs   float64
}

// Final returns the validation at the last step (N == T), the one a
// speedrun result is read from, or nil when the run printed none.
func (l *Log) Final() *ValLine {
	for i := len(l.Vals) - 1; i >= 0; i-- {
		if v := &l.Vals[i]; v.Step == v.Total {
			return v
		}
	}
	return nil
}

// maxLogLine bounds one line; longer lines (a program printing a tensor)
// are skipped.
const maxLogLine = 1 << 20

var (
	stepRE   = regexp.MustCompile(`^step:(\d+)/(\d+)(\s|$)`)
	memRE    = regexp.MustCompile(`^peak memory allocated: (\d+(?:\.\d+)?) MiB reserved: (\d+(?:\.\d+)?) MiB`)
	memOldRE = regexp.MustCompile(`^peak memory consumption: (\d+(?:\.\d+)?) MiB`)
)

// ParseLog reads speedrun log lines. Lines that are not step, validation,
// memory or injection lines are ignored, so a whole record log (source,
// nvidia-smi, lines) can be read as it is.
func ParseLog(r io.Reader) (*Log, error) {
	lg := &Log{}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > maxLogLine {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			lg.TooLong++
		} else {
			lg.add(strings.TrimRight(string(buf), "\r\n"))
		}
		buf, tooLong = buf[:0], false
		if errors.Is(err, io.EOF) {
			return lg, nil
		}
		if err != nil {
			return lg, err
		}
	}
}

func (lg *Log) add(s string) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, InjectedPrefix+" "); ok {
		lg.Injected = append(lg.Injected, rest)
		return
	}
	if m := memRE.FindStringSubmatch(s); m != nil {
		lg.PeakAllocatedMiB, _ = strconv.ParseFloat(m[1], 64)
		lg.PeakReservedMiB, _ = strconv.ParseFloat(m[2], 64)
		return
	}
	if m := memOldRE.FindStringSubmatch(s); m != nil {
		lg.PeakAllocatedMiB, _ = strconv.ParseFloat(m[1], 64)
		return
	}
	m := stepRE.FindStringSubmatch(s)
	if m == nil {
		return
	}
	step, err1 := strconv.Atoi(m[1])
	total, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(s[len(m[0]):]) {
		k, v, ok := strings.Cut(f, ":")
		if ok {
			kv[k] = v
		}
	}
	ms := func(k string) (float64, bool) {
		v, ok := kv[k]
		if !ok {
			return 0, false
		}
		return number(strings.TrimSuffix(v, "ms"))
	}
	tt, okT := ms("train_time")
	avg, _ := ms("step_avg")
	if v, ok := kv["val_loss"]; ok {
		loss, okL := number(v)
		if !okL || !okT {
			return
		}
		lg.Vals = append(lg.Vals, ValLine{Step: step, Total: total, ValLoss: loss, TrainTimeMs: tt, StepAvgMs: avg})
		return
	}
	if !okT {
		return
	}
	tl := TrainLine{Step: step, Total: total, TrainTimeMs: tt, StepAvgMs: avg}
	if v, ok := kv["train_loss"]; ok {
		if x, ok := number(v); ok {
			tl.TrainLoss = &x
		}
	}
	lg.Train = append(lg.Train, tl)
}

// number parses a float as Python prints it, nan and inf included.
func number(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true
	case "inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}
