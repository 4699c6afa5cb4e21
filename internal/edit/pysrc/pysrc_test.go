package pysrc

import "testing"

func TestMask(t *testing.T) {
	tests := []struct {
		name       string
		src        string
		want       string
		depth      int
		openLine   int
		openString bool
	}{
		{
			name: "comment and string",
			src:  "lr = 0.1  # lr=0.5\nname = \"lr=3\"\n",
			want: "lr = 0.1          \nname = \"    \"\n",
		},
		{
			name:  "triple quoted docstring spans lines",
			src:   "def f():\n    \"\"\"lr = 1\n    (\"\"\"\n    return (1,\n",
			want:  "def f():\n    \"\"\"      \n     \"\"\"\n    return (1,\n",
			depth: 1, openLine: 4,
		},
		{
			name:       "unterminated triple string",
			src:        "x = 1\ns = '''abc\ndef",
			want:       "x = 1\ns = '''   \n   ",
			openString: true,
		},
		{
			name: "escaped quote",
			src:  `s = "a\"b(" + f(x)`,
			want: `s = "     " + f(x)`,
		},
		{
			name:  "extra closer",
			src:   "x = 1)\n",
			want:  "x = 1)\n",
			depth: -1,
		},
		{
			name: "hash inside string is not a comment",
			src:  "s = '#' + t  # note\n",
			want: "s = ' ' + t        \n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sum := Mask([]byte(tt.src))
			if string(got) != tt.want {
				t.Errorf("Mask:\n got %q\nwant %q", got, tt.want)
			}
			if sum.Depth != tt.depth || sum.OpenBracketLine != tt.openLine || sum.OpenString != tt.openString {
				t.Errorf("summary = %+v, want depth %d line %d open string %v", sum, tt.depth, tt.openLine, tt.openString)
			}
		})
	}
}

func FuzzMask(f *testing.F) {
	f.Add("x = '''a\n''' # c\n(")
	f.Fuzz(func(t *testing.T, src string) {
		got, _ := Mask([]byte(src))
		if len(got) != len(src) {
			t.Fatalf("length changed: %d -> %d", len(src), len(got))
		}
		for i := range got {
			if (got[i] == '\n') != (src[i] == '\n') {
				t.Fatalf("newline moved at %d", i)
			}
		}
	})
}
