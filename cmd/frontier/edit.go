package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/edit"
)

func newEditCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edit",
		Short: "Apply model answers (SEARCH/REPLACE blocks or rewrites) to programs",
	}
	cmd.AddCommand(newEditApplyCmd(g))
	return cmd
}

// editApplyOptions are the inputs of "frontier edit apply".
type editApplyOptions struct {
	program      string // parent program file
	answer       string // saved model answer
	output       string // child file, "-" for stdout, "" for none
	finishReason string // the model's finish reason, if known
	json         bool   // print the outcome as JSON
}

func newEditApplyCmd(g *globals) *cobra.Command {
	var o editApplyOptions
	cmd := &cobra.Command{
		Use:   "apply PROGRAM ANSWER_FILE",
		Short: "Apply a saved model answer to a program and print the diff",
		Long: `Apply reads a model's answer (SEARCH/REPLACE blocks, or a whole program in a
code fence) and applies it to PROGRAM the way the search does. It prints a
unified diff on stdout and a summary on stderr; with -o it also writes the
child program. If the answer does not apply, it prints the exact failure,
as a model would receive it, and exits with code 1.

See docs/edits.md for the accepted answer format.`,
		Example: `  frontier edit apply train_gpt.py answer.md
  frontier edit apply train_gpt.py answer.md -o child.py
  frontier edit apply train_gpt.py answer.md -o - > child.py`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.program, o.answer = args[0], args[1]
			return runEditApply(cmd.Context(), g, o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", `write the child program to this file ("-": to stdout, instead of the diff)`)
	cmd.Flags().StringVar(&o.finishReason, "finish-reason", "", `the model's finish reason, if known ("length" refuses the answer as cut)`)
	cmd.Flags().BoolVar(&o.json, "json", false, "print the outcome as JSON: the diff, the counts, or why the answer does not apply")
	return cmd
}

// editApplyJSON is edit apply --json.
type editApplyJSON struct {
	Applied bool   `json:"applied"`
	Summary string `json:"summary,omitempty"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Diff    string `json:"diff,omitempty"`
	// Child is the child program when no -o file was given.
	Child  string `json:"child,omitempty"`
	Output string `json:"output,omitempty"`
	// Kind and Error say why the answer does not apply, as a model would
	// be told.
	Kind  string `json:"kind,omitempty"`
	Error string `json:"error,omitempty"`
}

// runEditApply applies the answer in o.answer to o.program.
func runEditApply(ctx context.Context, g *globals, o editApplyOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.json && o.output == "-" {
		return usage(errors.New("--json prints the child in its output; use -o FILE to write it to a file as well, not -o -"))
	}
	if o.program == "-" && o.answer == "-" {
		return usage(errors.New("the program and the answer cannot both be read from stdin: name a file for one of them"))
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	// A model's answer may rewrite the whole program: the same limit.
	limit := int64(cfg.MaxProgramSize)
	parent, err := readInput(ctx, g, o.program, "program", limit)
	if err != nil {
		return err
	}
	answer, err := readInput(ctx, g, o.answer, "answer", limit)
	if err != nil {
		return err
	}
	fail := func(kind string, err error) error {
		if o.json {
			if jerr := writeJSON(g.stdout, editApplyJSON{Kind: kind, Error: err.Error()}); jerr != nil {
				return jerr
			}
		}
		return err
	}
	e, err := edit.Parse(string(answer), o.finishReason)
	if err != nil {
		kind := string(edit.KindOf(err))
		return fail(kind, fmt.Errorf("the answer in %s cannot be read as an edit (%s):\n%w", o.answer, kind, err))
	}
	res, err := edit.Apply(parent, e)
	if err != nil {
		kind := string(edit.KindOf(err))
		if kind == "" {
			return fail("", fmt.Errorf("%s: %w", o.program, err))
		}
		return fail(kind, fmt.Errorf("the answer in %s does not apply to %s (%s):\n%w", o.answer, o.program, kind, err))
	}

	name := filepath.Base(o.program)
	diff, st := edit.Diff(name, name+" (child)", parent, res.Child)
	if o.output != "" && o.output != "-" {
		if err := writeEditChild(o.output, res.Child); err != nil {
			return err
		}
	}
	switch {
	case o.json:
		out := editApplyJSON{Applied: true, Summary: res.Summary(), Added: st.Added, Removed: st.Removed, Diff: diff, Output: o.output}
		if o.output == "" {
			out.Child = string(res.Child)
		}
		return writeJSON(g.stdout, out)
	case o.output == "-":
		if _, err := g.stdout.Write(res.Child); err != nil {
			return err
		}
	default:
		fmt.Fprint(g.stdout, diff)
	}
	fmt.Fprintf(g.stderr, "applied %s: +%d -%d lines\n", res.Summary(), st.Added, st.Removed)
	if o.output != "" && o.output != "-" {
		fmt.Fprintf(g.stderr, "wrote %s\n", o.output)
	}
	return nil
}

// writeEditChild writes data to path through a temporary file in the same
// folder, so a reader never sees a half-written program.
func writeEditChild(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
