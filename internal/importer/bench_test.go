package importer

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseLog reads a long run's output: 20,000 step lines with a
// validation every 125 steps.
func BenchmarkParseLog(b *testing.B) {
	var sb strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&sb, "step:%d/20000 train_time:%dms step_avg:55.20ms\n", i, 55*i)
		if i%125 == 0 {
			fmt.Fprintf(&sb, "step:%d/20000 val_loss:3.%04d train_time:%dms step_avg:55.20ms\n", i, 9999-i/3, 55*i)
		}
	}
	log := sb.String()
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		lg, err := ParseLog(strings.NewReader(log))
		if err != nil || lg.Final() == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInject rewrites a record the size of a 2026 script (about 2,300
// lines): what the log contract does before every run.
func BenchmarkInject(b *testing.B) {
	c, _, err := ExtractCode(readB(b, "record_2025.txt"))
	if err != nil {
		b.Fatal(err)
	}
	src := []byte(strings.Repeat("def f():\n    return 1\n\n", 750) + string(c))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Inject(src, testValues); err != nil {
			b.Fatal(err)
		}
	}
}
