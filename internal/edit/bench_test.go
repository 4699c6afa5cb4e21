package edit

import (
	"fmt"
	"strings"
	"testing"
)

// benchProgram returns a 3,000-line program of 300 ten-line functions and
// an answer with one four-line block in each of ten of them, spread over
// the program. With typo set, each SEARCH has a small difference so that
// every block goes down the ladder to the fuzzy rung.
func benchProgram(typo bool) (string, string) {
	// word gives each function its own twelve-letter name, so that no two
	// functions are near copies of each other.
	word := func(i int) string {
		b := make([]byte, 12)
		x := uint32(i)*2654435761 + 12345
		for k := range b {
			x = x*1103515245 + 12345
			b[k] = 'a' + byte(x>>16)%26
		}
		return string(b)
	}
	head := func(i int, comment string) string {
		w := word(i)
		return fmt.Sprintf("def %s(model, batch, lr=%d.0e-3):\n    \"\"\"%s\"\"\"\n    %s_in, %s_out = batch\n", w, i%9+1, comment, w, w)
	}
	var p strings.Builder
	for i := range 300 {
		w := word(i)
		p.WriteString(head(i, fmt.Sprintf("Run the %s step.", w)))
		fmt.Fprintf(&p, "    logits = model(%s_in)\n", w)
		fmt.Fprintf(&p, "    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), %s_out.view(-1))\n", w)
		p.WriteString("    loss.backward()\n")
		p.WriteString("    for group in model.optimizer.param_groups:\n")
		p.WriteString("        group[\"lr\"] = lr\n")
		fmt.Fprintf(&p, "    return loss.detach()  # %s\n", w)
		p.WriteString("\n")
	}
	var a strings.Builder
	a.WriteString("Here are ten changes.\n\n")
	for k := range 10 {
		i := 15 + 30*k
		w := word(i)
		comment := fmt.Sprintf("Run the %s step.", w)
		if typo {
			comment = fmt.Sprintf("Runs the %s step", w)
		}
		a.WriteString("```python\n<<<<<<< SEARCH\n")
		a.WriteString(head(i, comment))
		fmt.Fprintf(&a, "    logits = model(%s_in)\n", w)
		a.WriteString("=======\n")
		a.WriteString(head(i, comment))
		fmt.Fprintf(&a, "    logits = model(%s_in).float()\n", w)
		a.WriteString(">>>>>>> REPLACE\n```\n\n")
	}
	return p.String(), a.String()
}

func benchApply(b *testing.B, typo bool, want Method) {
	prog, answer := benchProgram(typo)
	if n := strings.Count(prog, "\n"); n != 3000 {
		b.Fatalf("program has %d lines", n)
	}
	src := []byte(prog)
	b.ReportAllocs()
	for b.Loop() {
		e, err := Parse(answer, "stop")
		if err != nil {
			b.Fatal(err)
		}
		res, err := Apply(src, e)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Matches) != 10 || res.Matches[9].Method != want {
			b.Fatalf("matches = %+v", res.Matches)
		}
	}
}

// BenchmarkApply10Blocks3000Lines parses and applies ten exact blocks to
// a 3,000-line program.
func BenchmarkApply10Blocks3000Lines(b *testing.B) { benchApply(b, false, MatchExact) }

// BenchmarkApply10FuzzyBlocks3000Lines is the same with every block
// matched only at the fuzzy rung, the slowest path.
func BenchmarkApply10FuzzyBlocks3000Lines(b *testing.B) { benchApply(b, true, MatchFuzzy) }

// BenchmarkRegions finds the regions of a long program with one region at
// its top, as a track's programs have: the edit of every child, and the
// check that it left them alone, look for them.
func BenchmarkRegions(b *testing.B) {
	prog, _ := benchProgram(false)
	src := []byte("# frontier:protected begin harness\nimport torch\n# frontier:protected end harness\n" + prog)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Regions(src); err != nil {
			b.Fatal(err)
		}
	}
}
