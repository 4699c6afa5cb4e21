package runner

import (
	"strings"
	"testing"
)

func TestPythonError(t *testing.T) {
	tests := []struct {
		name       string
		stderr     string
		wantLine   string
		wantTBHas  []string // substrings of the traceback
		wantTBNone bool
	}{
		{
			name: "plain traceback after other output",
			stderr: `warming up
Traceback (most recent call last):
  File "/run/train.py", line 10, in <module>
    main()
  File "/run/train.py", line 7, in main
    raise ValueError("bad learning rate 3.0")
ValueError: bad learning rate 3.0
`,
			wantLine:  "ValueError: bad learning rate 3.0",
			wantTBHas: []string{"Traceback (most recent call last):", `line 7, in main`, "ValueError: bad learning rate 3.0"},
		},
		{
			name: "chained: the last traceback wins",
			stderr: `Traceback (most recent call last):
  File "a.py", line 1, in <module>
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 3, in <module>
RuntimeError: lookup failed
`,
			wantLine:  "RuntimeError: lookup failed",
			wantTBHas: []string{"line 3"},
		},
		{
			name: "multi-line message and python 3.11 carets",
			stderr: `Traceback (most recent call last):
  File "m.py", line 2, in <module>
    model.load_state_dict(sd)
    ^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: Error(s) in loading state_dict for GPT:
	Missing key(s) in state_dict: "lm_head.weight".

unrelated trailing log line
`,
			wantLine:  "RuntimeError: Error(s) in loading state_dict for GPT:",
			wantTBHas: []string{"Missing key(s)", "^^^^"},
		},
		{
			name: "syntax error in the main script has no header",
			stderr: `  File "/run/train.py", line 3
    def f(:
          ^
SyntaxError: invalid syntax
`,
			wantLine:  "SyntaxError: invalid syntax",
			wantTBHas: []string{`File "/run/train.py", line 3`, "def f(:"},
		},
		{
			name: "syntax error in an imported module",
			stderr: `Traceback (most recent call last):
  File "/run/train.py", line 1, in <module>
    import model
  File "/run/model.py", line 2
    x = = 1
        ^
SyntaxError: invalid syntax
`,
			wantLine:  "SyntaxError: invalid syntax",
			wantTBHas: []string{"Traceback", "import model", "x = = 1"},
		},
		{
			name:       "indentation error",
			stderr:     "  File \"t.py\", line 2\n    return 1\nIndentationError: unexpected indent\n",
			wantLine:   "IndentationError: unexpected indent",
			wantTBHas:  []string{`File "t.py", line 2`},
			wantTBNone: false,
		},
		{
			name:       "missing script",
			stderr:     "/usr/bin/python3: can't open file '/run/nope.py': [Errno 2] No such file or directory\n",
			wantLine:   "/usr/bin/python3: can't open file '/run/nope.py': [Errno 2] No such file or directory",
			wantTBNone: true,
		},
		{
			name:       "python -m of a missing module",
			stderr:     "python3: No module named trainer\n",
			wantLine:   "python3: No module named trainer",
			wantTBNone: true,
		},
		{
			name: "import error is a traceback, not an interpreter message",
			stderr: `Traceback (most recent call last):
  File "/run/train.py", line 1, in <module>
    import torch
ModuleNotFoundError: No module named 'torch'
`,
			wantLine:  "ModuleNotFoundError: No module named 'torch'",
			wantTBHas: []string{"import torch"},
		},
		{
			name: "torchrun rank prefixes and interleaved output",
			stderr: `[rank0]: Traceback (most recent call last):
[rank0]:   File "/run/train.py", line 5, in <module>
[rank1]: step 10
[rank0]:     x.backward()
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
`,
			wantLine:  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
			wantTBHas: []string{"x.backward()"},
		},
		{
			name: "exception group",
			stderr: `  + Exception Group Traceback (most recent call last):
  |   File "g.py", line 1, in <module>
  | ExceptionGroup: two (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "g.py", line 2, in f
    | ValueError: inner
    +------------------------------------
`,
			wantLine: "ValueError: inner",
		},
		{
			name:       "fatal error from a crash",
			stderr:     "Fatal Python error: Segmentation fault\n\nCurrent thread 0x01 (most recent call first):\n  File \"x.py\", line 3 in f\n",
			wantLine:   "Fatal Python error: Segmentation fault",
			wantTBNone: true,
		},
		{
			name:       "no python error at all",
			stderr:     "error: something went wrong\n",
			wantLine:   "",
			wantTBNone: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, line := pythonError(Output{Head: tt.stderr, Total: int64(len(tt.stderr))})
			if line != tt.wantLine {
				t.Errorf("error line = %q, want %q", line, tt.wantLine)
			}
			if tt.wantTBNone && tb != "" {
				t.Errorf("traceback = %q, want none", tb)
			}
			for _, s := range tt.wantTBHas {
				if !strings.Contains(tb, s) {
					t.Errorf("traceback lacks %q:\n%s", s, tb)
				}
			}
			if strings.Contains(tb, "unrelated trailing") || strings.Contains(tb, "[rank1]") {
				t.Errorf("traceback includes unrelated lines:\n%s", tb)
			}
		})
	}
}

// TestPythonErrorSplitCapture covers a traceback that sits in the tail of
// a capture whose middle was dropped, and one whose header was dropped.
func TestPythonErrorSplitCapture(t *testing.T) {
	tb := "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nZeroDivisionError: division by zero\n"
	c := newCapped(100, 200)
	c.Write([]byte(strings.Repeat("noise\n", 1000) + tb))
	got, line := pythonError(c.output())
	if line != "ZeroDivisionError: division by zero" || !strings.HasPrefix(got, "Traceback") {
		t.Errorf("tail traceback: line %q, traceback %q", line, got)
	}

	c = newCapped(100, 40)
	c.Write([]byte(strings.Repeat("noise\n", 1000) + tb))
	got, line = pythonError(c.output())
	if line != "ZeroDivisionError: division by zero" || got != "" {
		t.Errorf("headless traceback: line %q, traceback %q", line, got)
	}
}

func TestPythonErrorBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(tracebackHeader + "\n")
	for i := range 2000 {
		b.WriteString("  File \"deep.py\", line 1, in f" + strings.Repeat("x", i%7) + "\n    f()\n")
	}
	b.WriteString("RecursionError: " + strings.Repeat("m", 5000) + "\n")
	tb, line := pythonError(Output{Head: b.String()})
	if len(tb) > maxTracebackBytes || !strings.HasPrefix(tb, tracebackHeader) || !strings.Contains(tb, "frames dropped") {
		t.Errorf("traceback of %d bytes not bounded as expected: %.200q", len(tb), tb)
	}
	if len(line) > maxErrorLineBytes+3 || !strings.HasPrefix(line, "RecursionError: mmm") {
		t.Errorf("error line of %d bytes: %.80q", len(line), line)
	}
}
