package verify

import (
	"os"
	"testing"
)

// FuzzInspect checks that no input makes the scanner or the rules panic,
// and that every finding names a line of the input.
func FuzzInspect(f *testing.F) {
	for _, path := range []string{"../../tracks/tiny/train.py", "../eval/testdata/speedrun_mini.py"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "(", ")", "'", `"""`, "f'{", "f'{x:{y}}'", "f'{'", "exec('exec(\"exec(1)\")')", "\\\n", "a.\n",
		"import", "from . import", "from x import (", "def f(", "x = = 1", "setattr(", "getattr(a,", "sys.modules[",
		"# coding: utf-7\n", "ｅｘｅｃ(x)", "x[\n", "lambda: (", "@torch.compile(mode=", "open(f'/{x}', 'w')",
		"class A:\n def f(self, time):\n  time.time = 1\n", "\x00\xff\xfe", "'\\x'", "'\\u12'", "b'\\777'",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fs, err := Inspect(src, Options{Reference: src[:len(src)/2], ValFile: "val.bin"})
		if err != nil {
			t.Fatal(err)
		}
		lines := 1
		for _, c := range src {
			if c == '\n' {
				lines++
			}
		}
		for _, f := range fs {
			if f.Line < 0 || f.Line > lines {
				t.Fatalf("finding on line %d of a %d-line input: %s", f.Line, lines, f)
			}
		}
	})
}
