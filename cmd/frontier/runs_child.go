package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

// runs child and runs diff: one member of a run, from the terminal.

// childOptions are runs child's flags.
type childOptions struct {
	prompts bool // print prompts and answers in full
	json    bool
}

func newRunsChildCmd(g *globals) *cobra.Command {
	var o childOptions
	cmd := &cobra.Command{
		Use:   "child RUN N",
		Short: "Show one member of a run: lineage, stage, idea, prompts and answers, edits, fix attempts, evaluations, claims",
		Long: `Child tells the story of member N of a run: its lineage from the reference,
its model, stage and template (and why a meta-prompted child fell back to a
template), its idea, every attempt with its edit, error and fast check, every
model call with its purpose, tokens and cost, its evaluations, its verdict
and the claims about it. Prompts and answers are stored redacted; they are
shortened unless --prompts is given. Also: frontier runs show RUN --child N.`,
		Example: `  frontier runs child run-3 17
  frontier runs child run-3 17 --prompts | less`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := memberID(args[1])
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), g, func(st store.Store) error {
				return runsChild(cmd.Context(), g.stdout, st, args[0], id, o)
			})
		},
	}
	cmd.Flags().BoolVar(&o.prompts, "prompts", false, "print every prompt and answer in full")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the member's story as JSON (prompts and answers in full)")
	return cmd
}

func newRunsDiffCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff RUN [N]",
		Short: "Diff a member's program against the reference and against its parent (default: the record, else the fastest)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var id int64
			if len(args) == 2 {
				var err error
				if id, err = memberID(args[1]); err != nil {
					return err
				}
			}
			return withStore(cmd.Context(), g, func(st store.Store) error {
				return runsDiff(cmd.Context(), g.stdout, st, args[0], id, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the diffs as JSON")
	return cmd
}

func memberID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, usage(fmt.Errorf("%q is not a member's id (a number, as runs show lists them)", s))
	}
	return id, nil
}

func runsChild(ctx context.Context, w io.Writer, st store.Store, ref string, id int64, o childOptions) error {
	run, err := st.Run(ctx, ref)
	if err != nil {
		return usage(err)
	}
	s, err := runview.TellMember(ctx, st, run, id)
	if errors.Is(err, store.ErrNotFound) {
		return usage(err)
	}
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(w, s.Doc())
	}
	full := o.prompts
	c := s.Child
	fmt.Fprintf(w, "member #%d of run %s: iteration %d, island %d, slot %d, %s\n", c.ID, run.Name, c.Iteration, c.Island, c.Slot, c.Origin)
	var lineage []string
	for _, m := range s.Lineage {
		lineage = append(lineage, fmt.Sprintf("#%d %s", m.ID, memberOutcome(m)))
	}
	fmt.Fprintf(w, "  lineage     %s\n", strings.Join(lineage, "  ->  "))
	if s.Source != nil {
		fmt.Fprintf(w, "  source      #%d (%s): %s\n", s.Source.ID, s.Source.Origin, memberOutcome(s.Source))
	}
	stage := string(c.Stage)
	if c.Template != "" {
		stage += ", template " + c.Template
	}
	fmt.Fprintf(w, "  model       %s, stage %s, seed %d\n", orDash(c.Model), stage, c.Seed)
	if s.Fallback != "" {
		fmt.Fprintf(w, "  fell back   to a templated prompt: %s\n", s.Fallback)
	}
	if c.Idea != "" {
		fmt.Fprintf(w, "  idea        %s\n", indent(c.Idea, "              "))
	}
	if c.Description != "" {
		fmt.Fprintf(w, "  change      %s\n", c.Description)
	}
	fmt.Fprintf(w, "  state       %s, verdict %s: %s\n", c.State, orDash(string(c.Verdict)), orDash(c.Reason))
	if c.Verdict.Valid() {
		fmt.Fprintf(w, "  measured    val loss %.4f, train time %s (single timing), %.2f ms/step, score %.1f\n", c.ValLoss, secsText(c.TrainTimeMs), c.StepAvgMs, c.Score)
	}
	if c.Summary != "" {
		fmt.Fprintf(w, "  time went   %s\n", c.Summary)
	}
	fmt.Fprintf(w, "  spend       $%.4f, %d tokens in, %d out, %d fix attempt(s)\n", c.CostUSD, c.InputTokens, c.OutputTokens, c.FixAttempts)
	for _, cl := range s.Claims {
		role := "claim"
		if cl.BaselineID == c.ID {
			role = fmt.Sprintf("baseline of #%d's claim", cl.ChildID)
		}
		fmt.Fprintf(w, "  %-11s %s\n", role, cl.Evidence())
	}
	if c.Error != "" {
		fmt.Fprintf(w, "\nlast error\n%s\n", indent(strings.TrimSpace(c.Error), "  "))
	}
	if len(s.Attempts) > 0 {
		fmt.Fprintln(w, "\nattempts")
		for _, a := range s.Attempts {
			prog := "no program"
			if a.ProgramHash != "" {
				prog = "program " + a.ProgramHash[:12]
			}
			fmt.Fprintf(w, "  %d %-9s call #%d, %s", a.Attempt, a.Kind, a.LLMCallID, prog)
			if a.FastVerdict != "" {
				fmt.Fprintf(w, ", fast check %s", a.FastVerdict)
				if a.FastReason != "" && a.FastVerdict != runs.FastOK {
					fmt.Fprintf(w, ": %s", clipText(a.FastReason, 140))
				}
			}
			fmt.Fprintln(w)
			if a.Error != "" {
				fmt.Fprintf(w, "      error: %s\n", indent(clipLines(a.Error, 12, full), "      "))
			}
		}
	}
	if len(s.Evaluations) > 0 {
		fmt.Fprintln(w, "\nevaluations")
		for _, ev := range s.Evaluations {
			kind := "full"
			if ev.FastOnly {
				kind = "fast"
			}
			fmt.Fprintf(w, "  #%d %s seed %d: %s %s", ev.ID, kind, ev.Seed, ev.State, orDash(ev.Verdict))
			if ev.TrainTimeMs > 0 {
				fmt.Fprintf(w, ", val loss %.4f, train time %s", ev.ValLoss, secsText(ev.TrainTimeMs))
			}
			if ev.Reason != "" && ev.Verdict != string(runs.Acceptable) {
				fmt.Fprintf(w, ": %s", clipText(ev.Reason, 140))
			}
			fmt.Fprintln(w)
			if c := ev.Conditions; c != nil {
				// The load behind the time, beside it.
				wall := ""
				if c.CPU != nil {
					wall = fmt.Sprintf("wall %s, ", secsText(c.CPU.WallMs))
				}
				fmt.Fprintf(w, "      ran under: %s%s\n", wall, c.Summary())
			}
		}
	}
	if len(s.Calls) > 0 {
		fmt.Fprintln(w, "\nmodel calls (stored redacted)")
		for _, call := range s.Calls {
			fmt.Fprintf(w, "  #%d %s %s: %s, %d in / %d out, $%.4f, %.1f s", call.ID, call.Purpose, call.Model, call.State,
				call.InputTokens, call.OutputTokens, call.CostUSD, call.LatencyMs/1000)
			if call.Error != "" {
				fmt.Fprintf(w, ", error: %s", clipText(call.Error, 140))
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "    prompt:\n%s\n", indent(clipLines(promptText(call.Request), 16, full), "      "))
			if call.Answer != "" {
				fmt.Fprintf(w, "    answer:\n%s\n", indent(clipLines(call.Answer, 24, full), "      "))
			}
		}
		if !full {
			fmt.Fprintln(w, "  (shortened: --prompts prints them in full)")
		}
	}
	return nil
}

// memberOutcome is a member's verdict and time in a few words.
func memberOutcome(c *store.Child) string {
	switch {
	case c.Origin == runs.OriginReference:
		return fmt.Sprintf("(reference, %s)", secsText(c.TrainTimeMs))
	case c.Verdict.Valid():
		return fmt.Sprintf("(%s, %s)", c.Verdict, secsText(c.TrainTimeMs))
	case c.Verdict != "":
		return "(" + string(c.Verdict) + ")"
	}
	return "(" + string(c.State) + ")"
}

// promptText is a stored request as people read it: the system prompt,
// then each message with its role.
func promptText(stored string) string {
	var req llm.Request
	if json.Unmarshal([]byte(stored), &req) != nil {
		return stored
	}
	var b strings.Builder
	if req.System != "" {
		fmt.Fprintf(&b, "[system]\n%s\n", req.System)
	}
	for _, m := range req.Messages {
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, m.Content)
	}
	return strings.TrimRight(b.String(), "\n")
}

// clipLines keeps the first n lines of s unless full, and says how many
// it left out.
func clipLines(s string, n int, full bool) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if full || len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n[... %d more lines]", len(lines)-n)
}

func indent(s, pad string) string { return pad + strings.ReplaceAll(s, "\n", "\n"+pad) }

// runsDiff prints a member's program against the reference and against
// its parent (what it tried).
func runsDiff(ctx context.Context, w io.Writer, st store.Store, ref string, id int64, asJSON bool) error {
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return err
	}
	byID := map[int64]*store.Child{}
	for _, c := range s.Members {
		byID[c.ID] = c
	}
	var c *store.Child
	switch {
	case id != 0:
		c = byID[id]
		if c == nil {
			return usage(fmt.Errorf("run %s has no member #%d", s.Run.Name, id))
		}
	case s.Record != nil && s.RecordClaim != nil:
		c = s.Record
	case s.Fastest != nil:
		c = s.Fastest
	default:
		return fmt.Errorf("run %s has no acceptable program yet; name one: frontier runs diff %s N", s.Run.Name, s.Run.Name)
	}
	if c.ProgramHash == "" {
		return fmt.Errorf("#%d has no program (%s)", c.ID, orDash(string(c.Verdict)))
	}
	src, err := st.Program(ctx, c.ProgramHash)
	if err != nil {
		return err
	}
	against := []struct {
		label string
		m     *store.Child
	}{{"reference", s.Reference}}
	if p := byID[c.ParentID]; p != nil && (s.Reference == nil || p.ProgramHash != s.Reference.ProgramHash) {
		against = append(against, struct {
			label string
			m     *store.Child
		}{"parent", p})
	}
	out := runsDiffJSON{Run: s.Run.Name, Member: runview.Program(c, byID), Against: []diffJSON{}}
	var bases []*store.Child
	for _, a := range against {
		if a.m == nil || a.m.ProgramHash == "" {
			continue
		}
		base, err := st.Program(ctx, a.m.ProgramHash)
		if err != nil {
			return err
		}
		d, stat := edit.Diff(fmt.Sprintf("#%d", a.m.ID), fmt.Sprintf("#%d", c.ID), base, src)
		out.Against = append(out.Against, diffJSON{Label: a.label, Member: runview.Program(a.m, byID), Added: stat.Added, Removed: stat.Removed, Diff: d})
		bases = append(bases, a.m)
	}
	if asJSON {
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "# #%d %s, %s\n", c.ID, memberOutcome(c), orDash(c.Description))
	for i, d := range out.Against {
		label := "the reference"
		if d.Label == "parent" {
			label = "its parent"
		}
		fmt.Fprintf(w, "\n# against %s #%d %s: +%d -%d lines\n", label, bases[i].ID, memberOutcome(bases[i]), d.Added, d.Removed)
		if d.Diff == "" {
			fmt.Fprintln(w, "# (identical)")
		}
		fmt.Fprint(w, d.Diff)
	}
	return nil
}
