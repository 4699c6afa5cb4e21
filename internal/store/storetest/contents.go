package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
)

// Program returns a deterministic Python-like program of about size
// bytes: lines of varied identifiers and numbers, which compress about as
// real code does.
func Program(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"x", "h", "w", "attn", "mlp", "norm", "lr", "step", "loss", "grad", "torch", "model", "block", "head", "proj", "scale"}
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "def %s_%d(%s, %s):\n", words[r.IntN(len(words))], i, words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 1:
			fmt.Fprintf(&b, "    # %s %s of %s: %d\n", words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(10000))
		default:
			fmt.Fprintf(&b, "    %s_%d = torch.%s(%s_%d, %s) * %.4f\n", words[r.IntN(len(words))], r.IntN(100), words[r.IntN(len(words))],
				words[r.IntN(len(words))], r.IntN(100), words[r.IntN(len(words))], r.Float64())
		}
	}
	return b.Bytes()
}

// Mutate returns src with n lines replaced, at places seed picks.
func Mutate(src []byte, seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	lines := strings.SplitAfter(string(src), "\n")
	for range n {
		i := r.IntN(len(lines))
		lines[i] = fmt.Sprintf("    changed_%d = step * %.6f  # mutation %d\n", r.IntN(1000), r.Float64(), seed)
	}
	return []byte(strings.Join(lines, ""))
}

// testContents: programs, prompts and answers read back byte for byte; a
// child a few lines away from its parent, and a prompt that repeats the
// parent, cost a fraction of their size; text fields are kept as UTF-8.
func testContents(t *testing.T, s store.Store) {
	ctx := context.Background()
	parent := Program(1, 100<<10)
	if _, err := s.PutProgram(ctx, parent, ""); err != nil {
		t.Fatal(err)
	}
	before, err := s.Usage(ctx)
	must(t, err)
	const children = 20
	kids := make([][]byte, children)
	r := newRun(t, s, "contents")
	prev := parent
	for i := range kids {
		kids[i] = Mutate(prev, uint64(i), 3)
		h, err := s.PutProgram(ctx, kids[i], "")
		must(t, err)
		if h != store.Hash(kids[i]) {
			t.Fatalf("child %d stored as %s", i, h)
		}
		// The prompt that asks for the next child repeats this one,
		// escaped in JSON.
		req, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "system", "content": "You improve training programs."},
			{"role": "user", "content": "Improve this program:\n" + string(kids[i])}}})
		c := &store.LLMCall{RunID: r.ID, Purpose: "template", Model: "m", Request: string(req)}
		must(t, s.InsertLLMCall(ctx, c))
		c.State, c.Answer = store.CallDone, "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"
		must(t, s.FinishLLMCall(ctx, c))
		if gotReq, gotAns, err := s.LLMCallText(ctx, c.ID); err != nil || gotReq != string(req) || gotAns != c.Answer {
			t.Fatalf("call %d reads back %d and %d bytes (%v), want %d and %d", c.ID, len(gotReq), len(gotAns), err, len(req), len(c.Answer))
		}
		prev = kids[i]
	}
	for i, k := range kids {
		got, err := s.Program(ctx, store.Hash(k))
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("child %d reads back as %d bytes (%v), want its %d", i, len(got), err, len(k))
		}
	}
	after, err := s.Usage(ctx)
	must(t, err)
	// Each child and its prompt hold about 200 KB; what is new in them is
	// a few lines. A store that kept them whole grows by 200 KB a child
	// (compressed, 60 KB).
	if per := (after.Bytes - before.Bytes) / children; per > 40<<10 {
		t.Errorf("a child 3 lines away from its parent, with its prompt, cost %d bytes; want what is new (under 40 KiB)", per)
	}
	calls, err := s.LLMCalls(ctx, r.ID, true)
	if err != nil || len(calls) != children || !strings.Contains(calls[children-1].Request, "changed_") {
		t.Errorf("LLMCalls(text) = %d calls, %v", len(calls), err)
	}
	// The empty program, and programs that share everything but a byte.
	for _, src := range [][]byte{{}, []byte("a"), append(bytes.Clone(parent), 'x')} {
		h, err := s.PutProgram(ctx, src, "")
		must(t, err)
		if got, err := s.Program(ctx, h); err != nil || !bytes.Equal(got, src) {
			t.Errorf("a program of %d bytes reads back as %d (%v)", len(src), len(got), err)
		}
	}
	// Text is UTF-8: NUL and invalid bytes are replaced.
	e := newEvaluation(t, s, "text", false)
	e.Reason = "bad\x00byte \xff end"
	must(t, s.FinishEvaluation(ctx, e, nil))
	if got, err := s.Evaluation(ctx, e.ID); err != nil || got.Reason != "bad\uFFFDbyte \uFFFD end" {
		t.Errorf("a reason with NUL and an invalid byte reads back as %q (%v)", got.Reason, err)
	}
}
