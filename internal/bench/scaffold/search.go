// Package scaffold runs the searches of the reproduction benchmark, as the
// published benchmark's scaffolds shape them: flat (best-of-N from the
// start program), tree (greedy: expand the best node), forest (several
// trees), aide (debug a buggy node with probability 0.5, else improve the
// best) and multi-aide. A search is a tree of nodes: node 0 is the start
// program, every other node a program proposed from its parent by a model
// (or the mutate baseline) and judged by the evaluator.
//
// Every node is recorded before its proposal is asked for, every model
// call before it is sent and after it answers, every program before it is
// evaluated, and the evaluator records the evaluation before its process
// starts; a search killed at any moment resumes from exactly that (Run
// again on the same attempt): a node whose proposal was cut off is
// proposed again, a node whose evaluation finished but was not recorded
// adopts it, one whose evaluation was cut off is evaluated again. The
// policy's random choices are drawn from the seed and the step, so a
// resumed search makes the same ones.
package scaffold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/search"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Store is what a search records into; store.Store is one.
type Store interface {
	PutProgram(ctx context.Context, src []byte, normHash string) (string, error)
	Program(ctx context.Context, hash string) ([]byte, error)
	InsertBenchNode(ctx context.Context, n *store.BenchNode) error
	UpdateBenchNode(ctx context.Context, n *store.BenchNode) error
	BenchNodes(ctx context.Context, attemptID int64) ([]*store.BenchNode, error)
	InsertBenchCall(ctx context.Context, nodeID int64, c *store.LLMCall) error
	FinishLLMCall(ctx context.Context, c *store.LLMCall) error
	LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*store.Evaluation, error)
	InterruptEvaluations(ctx context.Context, programHash string, since time.Time) error
}

// Evaluator judges a program; *eval.Evaluator is one.
type Evaluator interface {
	Evaluate(ctx context.Context, req eval.Request) (*eval.Result, error)
}

// Model proposes children: a language model (Client), or a proposer that
// needs no model (the mutate baseline, recorded answers).
type Model struct {
	// Name is the Request.Model of every call, and how the model is shown.
	Name     string
	Client   llm.Client
	Proposer propose.Proposer
}

// Search runs one attempt's search. Its fields are set once.
type Search struct {
	Store     Store
	Evaluator Evaluator
	Model     Model
	Policy    Policy
	// Budget is the number of nodes the search makes, the start program
	// not counted (the published benchmark's max_n_nodes, 20).
	Budget int
	Track  *track.Spec
	// Hardware names what the programs are meant to run on, for the
	// prompts of a log-contract track ("8 x H100"); empty: the track's
	// device and GPUs.
	Hardware string
	// ProgramName is the programs' file name (train.py).
	ProgramName string
	// Hints are shown in every prompt.
	Hints []Hint
	// Seed draws the policy's choices and the mutate baseline's; EvalSeed
	// is the seed every program is evaluated with (the same data order).
	Seed     uint64
	EvalSeed int
	// ApplyFixes is how many times an answer that does not apply goes
	// back to its model with the error (the published benchmark's coder
	// retries); 0 means none.
	ApplyFixes int
	Prompt     PromptSettings
	// Redact removes secrets from prompts and answers before they are
	// stored; nil means llm.Redact.
	Redact func(string) string
	// Stop, when set, is asked before each new node: a reason ends the
	// search early (a budget of the bench run was reached).
	Stop func() string
	// OnNode, when set, is called with each node once it is settled.
	OnNode func(*store.BenchNode)
	Log    *slog.Logger
}

// Outcome is how a search ended.
type Outcome struct {
	// Nodes are the search's nodes, node 0 the start program.
	Nodes []*store.BenchNode
	// Best is the fastest acceptable node, node 0 when none beat it.
	Best *store.BenchNode
	// Stopped says why the search ended before its budget was spent
	// ("" when it was): it can be resumed.
	Stopped string
}

// errBudget wraps the budget errors of model calls that end a search
// early; the node waits for a resume.
var errBudget = errors.New("budget")

// Run runs (or resumes) the search of attempt attemptID from start, whose
// train time startMs ranks it against the nodes.
func (s *Search) Run(ctx context.Context, attemptID int64, start []byte, startMs float64) (*Outcome, error) {
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.Redact == nil {
		s.Redact = llm.Redact
	}
	pr, err := loadPrompts()
	if err != nil {
		return nil, err
	}
	w := &worker{s: s, prompts: pr, attempt: attemptID}
	nodes, err := s.Store.BenchNodes(ctx, attemptID)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		hash, err := s.Store.PutProgram(ctx, start, edit.NormalizedHash(start))
		if err != nil {
			return nil, err
		}
		root := &store.BenchNode{AttemptID: attemptID, Kind: KindStart, State: store.NodeDone, ProgramHash: hash,
			NormHash: edit.NormalizedHash(start), Verdict: runs.Acceptable, TrainTimeMs: startMs,
			Description: "the start program"}
		if err := s.Store.InsertBenchNode(ctx, root); err != nil {
			return nil, err
		}
		nodes = []*store.BenchNode{root}
	}
	w.nodes = nodes
	policy := s.Policy
	if s.Model.Client == nil && s.Model.Proposer != nil {
		if _, replay := s.Model.Proposer.(*propose.Replay); !replay {
			// The mutate baseline cannot read an error: it only improves.
			policy.DebugProb = 0
		}
	}
	out := &Outcome{}
	for _, n := range nodes {
		if n.State == store.NodeDone {
			continue
		}
		s.Log.Info("bench: resuming a node", "attempt", attemptID, "node", n.Seq, "state", n.State)
		if err := w.settle(ctx, n); err != nil {
			if errors.Is(err, errBudget) {
				out.Stopped = err.Error()
				break
			}
			return nil, err
		}
	}
	for out.Stopped == "" {
		p, ok := policy.next(w.nodes, s.Budget, s.Seed)
		if !ok {
			break
		}
		if s.Stop != nil {
			if reason := s.Stop(); reason != "" {
				out.Stopped = reason
				break
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := &store.BenchNode{AttemptID: attemptID, Seq: len(w.nodes), Step: p.step, ParentID: p.parent.ID, Kind: p.kind,
			DebugDepth: p.debugDepth, State: store.NodeProposing}
		if err := s.Store.InsertBenchNode(ctx, n); err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, n)
		if err := w.settle(ctx, n); err != nil {
			if errors.Is(err, errBudget) {
				out.Stopped = err.Error()
				break
			}
			return nil, err
		}
	}
	out.Nodes, out.Best = w.nodes, Best(w.nodes)
	return out, nil
}

// worker holds one search's state while it runs.
type worker struct {
	s       *Search
	prompts prompts
	attempt int64
	nodes   []*store.BenchNode
}

// settle brings a node to done: proposes it when it has no program yet,
// then evaluates it (or adopts an evaluation that finished unrecorded).
func (w *worker) settle(ctx context.Context, n *store.BenchNode) error {
	if n.State == store.NodeProposing {
		if err := w.propose(ctx, n); err != nil {
			return err
		}
	}
	if n.State == store.NodeEvaluating {
		if err := w.evaluate(ctx, n); err != nil {
			return err
		}
	}
	if w.s.OnNode != nil {
		w.s.OnNode(n)
	}
	return nil
}

func (w *worker) parentOf(n *store.BenchNode) *store.BenchNode { return byID(w.nodes, n.ParentID) }

// propose asks the model for the node's program and records it; a node
// without a program ends here (apply_failed, no_proposal) and one that
// repeats a program of the search ends as a duplicate.
func (w *worker) propose(ctx context.Context, n *store.BenchNode) error {
	parent := w.parentOf(n)
	src, err := w.s.Store.Program(ctx, parent.ProgramHash)
	if err != nil {
		return err
	}
	prop, err := w.ask(ctx, n, parent, src)
	if errors.Is(err, errBudget) {
		return err
	}
	var se *search.StoreError
	if errors.As(err, &se) {
		return se.Err
	}
	if err != nil {
		n.State, n.Error = store.NodeDone, w.s.Redact(err.Error())
		n.Verdict = runs.NoProposal
		if pe := propose.AsError(err); pe != nil && (pe.Kind == propose.FailApply || pe.Kind == propose.FailUnparseable || pe.Kind == propose.FailNoAnswer) {
			n.Verdict = runs.ApplyFailed
		}
		return w.s.Store.UpdateBenchNode(ctx, n)
	}
	child := prop.Child()
	n.NormHash = edit.NormalizedHash(child)
	n.Description = prop.Description
	if h, err := w.s.Store.PutProgram(ctx, child, n.NormHash); err != nil {
		return err
	} else {
		n.ProgramHash = h
	}
	n.State = store.NodeEvaluating
	for _, o := range w.nodes {
		if o.ID != n.ID && o.NormHash == n.NormHash && o.ProgramHash != "" {
			n.State, n.Verdict, n.DuplicateOf = store.NodeDone, runs.Duplicate, o.ID
			n.Reason = fmt.Sprintf("the same program as node #%d", o.Seq)
			break
		}
	}
	return w.s.Store.UpdateBenchNode(ctx, n)
}

// ask gets a proposal for n from the model: a prompt (with up to
// ApplyFixes re-asks while the answer does not apply) for a language
// model or recorded answers, a mutation for the baseline.
func (w *worker) ask(ctx context.Context, n, parent *store.BenchNode, src []byte) (*propose.Proposal, error) {
	s := w.s
	req := propose.Request{Parent: propose.Program{Name: s.ProgramName, Source: src}, Seed: s.Seed ^ uint64(n.Seq)*0x9e3779b97f4a7c15}
	if s.Model.Client == nil && s.Model.Proposer != nil {
		if _, replay := s.Model.Proposer.(*propose.Replay); !replay {
			return s.Model.Proposer.Propose(ctx, req)
		}
	}
	d := w.promptData(n, parent, src)
	name := promptImprove
	if n.Kind == KindDebug {
		name = promptDebug
	}
	for try := 0; ; try++ {
		prompt, err := w.prompts.request(name, s.Model.Name, d, s.Prompt)
		if err != nil {
			return nil, err
		}
		req.Prompt = prompt
		prop, err := w.call(ctx, n, name, req)
		pe := propose.AsError(err)
		if err == nil || pe == nil || pe.Feedback() == "" || try >= s.ApplyFixes {
			return prop, err
		}
		// The answer did not apply: show the model why, with the program.
		d.Previous, d.Error = s.Redact(pe.Answer), pe.Feedback()
		name = promptFixApply
	}
}

// call sends one prompt through the model and records the call.
func (w *worker) call(ctx context.Context, n *store.BenchNode, purpose string, req propose.Request) (*propose.Proposal, error) {
	s := w.s
	if s.Model.Client != nil {
		rec := w.recorder(s.Model.Client, n, purpose)
		prop, err := propose.NewLLM(rec).Propose(ctx, req)
		charge(n, rec)
		if rec.Err != nil {
			// A failure to record ends the search, whatever the proposer
			// made of it.
			return nil, &search.StoreError{Err: rec.Err}
		}
		return prop, budgetStop(err)
	}
	// Recorded answers: the call is recorded as it was replayed.
	prop, err := s.Model.Proposer.Propose(ctx, req)
	var resp *llm.Response
	if prop != nil {
		resp = prop.Response
	} else if pe := propose.AsError(err); pe != nil {
		resp = pe.Response
	}
	if resp != nil {
		rec := w.recorder(nil, n, purpose)
		if err := rec.Replayed(ctx, req.Prompt, resp); err != nil {
			return nil, err
		}
		charge(n, rec)
	}
	return prop, err
}

// budgetStop turns a model call refused by a budget into errBudget: the
// node is not failed, it waits for a resume with a larger budget.
func budgetStop(err error) error {
	var be *llm.BudgetError
	if errors.As(err, &be) {
		return fmt.Errorf("%w: %v", errBudget, be)
	}
	return err
}

// promptData is what the prompt of node n shows.
func (w *worker) promptData(n, parent *store.BenchNode, src []byte) *promptData {
	s := w.s
	d := &promptData{Track: viewOf(s.Track, s.Hardware), Kind: n.Kind, Seq: parent.Seq, ProgramName: s.ProgramName, Program: string(src),
		Hints: s.Hints, Metrics: metricsText(parent.Verdict, parent.ValLoss, parent.TrainTimeMs, parent.Seq == 0)}
	if n.Kind == KindDebug {
		max := s.Prompt.MaxErrorChars
		if max == 0 {
			max = 3000
		}
		d.Error = clipTail(strings.TrimSpace(parent.Reason+"\n"+parent.Error), max)
		if parent.Verdict == runs.LossTooHigh {
			d.Missed = fmt.Sprintf("its validation loss is %.4f, above the target %.4g (train time %s)", parent.ValLoss, s.Track.TargetValLoss, seconds(parent.TrainTimeMs))
		}
	}
	const keep = 10
	for _, o := range w.nodes[1:] {
		if o.State != store.NodeDone {
			continue
		}
		d.History = append(d.History, historyLine{Seq: o.Seq, Parent: byID(w.nodes, o.ParentID).Seq, Kind: o.Kind,
			Outcome: outcomeText(o), Description: o.Description})
	}
	if len(d.History) > keep {
		d.History = d.History[len(d.History)-keep:]
	}
	return d
}

func outcomeText(n *store.BenchNode) string {
	switch n.Verdict {
	case runs.Acceptable:
		return fmt.Sprintf("acceptable in %s", seconds(n.TrainTimeMs))
	case runs.LossTooHigh:
		return fmt.Sprintf("val loss %.4f, above the target", n.ValLoss)
	}
	return string(n.Verdict)
}

// evaluate judges the node's program, or adopts the evaluation of it that
// finished after the node was last recorded (the process that ran it was
// killed before it could record the node).
func (w *worker) evaluate(ctx context.Context, n *store.BenchNode) error {
	s := w.s
	if res, ev, err := search.Adopt(ctx, s.Store, s.Track.Name, n.ProgramHash, false, n.UpdatedAt); err != nil {
		return err
	} else if res != nil {
		s.Log.Info("bench: adopting an evaluation that finished before a restart", "node", n.Seq, "evaluation", ev.ID)
		n.EvaluationID, n.Verdict, n.Reason, n.ValLoss, n.TrainTimeMs = ev.ID, runs.Verdict(ev.Verdict), ev.Reason, ev.ValLoss, ev.TrainTimeMs
		n.Error, n.State = res.Traceback, store.NodeDone
		return s.Store.UpdateBenchNode(ctx, n)
	}
	if err := s.Store.InterruptEvaluations(ctx, n.ProgramHash, n.UpdatedAt); err != nil {
		return err
	}
	src, err := s.Store.Program(ctx, n.ProgramHash)
	if err != nil {
		return err
	}
	res, err := s.Evaluator.Evaluate(ctx, eval.Request{Track: s.Track, Program: src, Name: s.ProgramName, Seed: s.EvalSeed})
	if err != nil {
		if errors.Is(err, eval.ErrBadProgram) {
			n.State, n.Verdict, n.Error = store.NodeDone, runs.Invalid, err.Error()
			return s.Store.UpdateBenchNode(ctx, n)
		}
		return fmt.Errorf("evaluate node %d: %w", n.Seq, err)
	}
	n.EvaluationID, n.Verdict, n.Reason, n.Error = res.EvaluationID, res.Verdict, res.Reason, res.Traceback
	n.ValLoss, n.TrainTimeMs, n.State = res.Metrics.ValLoss, res.Metrics.TrainTimeMs, store.NodeDone
	return s.Store.UpdateBenchNode(ctx, n)
}
