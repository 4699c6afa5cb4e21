// Package propose turns a parent program into a candidate child program.
//
// A [Proposer] takes a [Request] (the parent, a ready prompt, a seed) and
// returns a [Proposal]: the raw answer, the parsed edit and the child
// program. Three proposers exist:
//
//   - [LLM] asks a language model through an llm.Client and applies its
//     answer;
//   - [Mutate] perturbs numeric hyperparameters without a model: the
//     baseline every model must beat, and the default when no model is
//     configured;
//   - [Replay] replays answers recorded in a JSONL file, for tests and for
//     re-running a past search without paying for it again.
//
// All three go through the same edit.Parse and edit.Apply path, and fail
// with an [*Error] whose Kind tells the caller what to do next (stop, or
// hand [Error.Feedback] back to a model in a fix loop).
package propose

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/llm"
)

// Proposer proposes one child of a parent program. Implementations are
// safe for concurrent use.
type Proposer interface {
	Propose(ctx context.Context, req Request) (*Proposal, error)
}

// Program is a named program source.
type Program struct {
	Name   string // file name, for diffs and messages, e.g. "train_gpt.py"
	Source []byte
	// ValLoss is the validation loss the program was measured at; 0 when
	// it has none (a program that failed, or one being fixed).
	ValLoss float64
}

// Request is what the evolution engine asks of a proposer.
type Request struct {
	Parent Program
	// Prompt is the ready request for a model: model spec, system prompt,
	// messages and sampling settings, built by the caller. Proposers that
	// call no model ignore it (Replay uses it to find a recorded answer).
	Prompt llm.Request
	// Seed makes proposers that draw random numbers deterministic.
	Seed uint64
	// Target is the track's target validation loss (0: not given). With
	// the parent's ValLoss it says how much loss the parent has to spare.
	Target float64
	// Attempt is the child's 1-based place among the children proposed at
	// once from this parent (0: not known).
	Attempt int
}

// Kind names a proposer.
type Kind string

// Proposer kinds.
const (
	KindLLM    Kind = "llm"
	KindMutate Kind = "mutate"
	KindReplay Kind = "replay"
)

// Proposal is a candidate child program.
type Proposal struct {
	Kind Kind
	// Description says in one line what the proposal changes.
	Description string
	// Answer is the raw answer text: the model's, the recorded one, or the
	// SEARCH/REPLACE text Mutate wrote.
	Answer string
	Edit   *edit.Edit
	// Result holds the child program and how each block applied.
	Result *edit.Result
	// Response is the model's response (usage, cost, model) when a model
	// answered, or the recorded one for Replay; nil for Mutate.
	Response *llm.Response
}

// Child returns the child program's source.
func (p *Proposal) Child() []byte { return p.Result.Child }

// FailureKind says why a proposer failed.
type FailureKind string

// Failure kinds.
const (
	// FailCall: the model could not be called (network, provider error,
	// budget exhausted). Err is the llm layer's error.
	FailCall FailureKind = "call"
	// FailNoAnswer: the model answered with nothing.
	FailNoAnswer FailureKind = "no_answer"
	// FailUnparseable: the answer holds no usable edit; Err is an
	// *edit.ParseError.
	FailUnparseable FailureKind = "unparseable"
	// FailApply: the edit does not apply to the parent; Err holds one
	// *edit.ApplyError per failed block (see edit.ApplyErrors).
	FailApply FailureKind = "apply"
	// FailNothingToDo: the proposer found nothing to change (Mutate: no
	// tunable hyperparameter outside protected regions).
	FailNothingToDo FailureKind = "nothing_to_do"
	// FailExhausted: the replay recording has no answer left.
	FailExhausted FailureKind = "exhausted"
)

// Error is a proposer's failure. For FailNoAnswer, FailUnparseable and
// FailApply the model was paid for: Response carries its usage and cost.
type Error struct {
	Kind     FailureKind
	Proposer Kind
	// Model is the model spec asked, if any.
	Model string
	// Answer is the raw answer text, if there was one.
	Answer   string
	Response *llm.Response
	Err      error
}

func (e *Error) Error() string {
	who := string(e.Proposer)
	if e.Model != "" {
		who += " " + e.Model
	}
	var what string
	switch e.Kind {
	case FailCall:
		what = "call the model"
	case FailNoAnswer:
		what = "the model gave an empty answer"
	case FailUnparseable:
		what = "read an edit from the answer"
	case FailApply:
		what = "apply the answer to the parent"
	case FailNothingToDo:
		what = "find something to change"
	case FailExhausted:
		what = "replay a recorded answer"
	case FailNotIdea:
		what = "get an idea from the model"
	default:
		what = string(e.Kind)
	}
	if e.Err == nil {
		return fmt.Sprintf("propose (%s): %s", who, what)
	}
	return fmt.Sprintf("propose (%s): %s: %v", who, what, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Feedback returns the text to hand back to a model so that it can fix
// its answer: the edit failure's own message, which names the block, says
// why and shows the program lines involved. It is "" for failures a model
// cannot fix (FailCall, FailNothingToDo, FailExhausted).
func (e *Error) Feedback() string {
	switch e.Kind {
	case FailNoAnswer:
		return "Your answer was empty. Answer with SEARCH/REPLACE blocks that change the program."
	case FailUnparseable, FailApply:
		if e.Err != nil {
			return e.Err.Error()
		}
	}
	return ""
}

// AsError returns the *Error in err's tree, or nil.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// finish parses and applies an answer for the proposers that get one from
// a model or a recording.
func finish(kind Kind, req Request, resp *llm.Response) (*Proposal, error) {
	fail := func(fk FailureKind, err error) error {
		return &Error{Kind: fk, Proposer: kind, Model: req.Prompt.Model, Answer: resp.Text, Response: resp, Err: err}
	}
	if strings.TrimSpace(resp.Text) == "" {
		return nil, fail(FailNoAnswer, nil)
	}
	e, err := edit.Parse(resp.Text, resp.FinishReason)
	if err != nil {
		return nil, fail(FailUnparseable, err)
	}
	res, err := edit.Apply(req.Parent.Source, e)
	if err != nil {
		return nil, fail(FailApply, err)
	}
	model := resp.Model
	if model == "" {
		model = req.Prompt.Model
	}
	return &Proposal{
		Kind:        kind,
		Description: describe(model, resp.Text, res),
		Answer:      resp.Text,
		Edit:        e,
		Result:      res,
		Response:    resp,
	}, nil
}

// describe summarizes a model's proposal in one line: the model, the first
// line of its prose if it wrote any, and how the edit applied.
func describe(model, answer string, res *edit.Result) string {
	var b strings.Builder
	if model != "" {
		b.WriteString(model)
		b.WriteString(": ")
	}
	if lead := leadLine(answer); lead != "" {
		b.WriteString(lead)
		b.WriteString(" (")
		b.WriteString(res.Summary())
		b.WriteString(")")
	} else {
		b.WriteString(res.Summary())
	}
	return b.String()
}

// leadLine returns the first line of prose before any block or fence,
// cut to 120 characters.
func leadLine(answer string) string {
	for _, l := range strings.Split(answer, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "<<<<<<<") || strings.HasPrefix(t, "~~~") {
			return ""
		}
		t = strings.TrimLeft(t, "#*-> ")
		if t == "" {
			continue
		}
		if r := []rune(t); len(r) > 120 {
			t = string(r[:117]) + "..."
		}
		return t
	}
	return ""
}
