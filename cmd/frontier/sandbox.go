package main

import (
	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/sandbox"
)

// newSandboxCmd is the hidden helper the sandbox re-executes this binary
// as: it applies a policy to its own process (Landlock, signal settings)
// and then executes the program in its place. Its command line is written
// by package sandbox, not by people.
func newSandboxCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    sandbox.HelperCommand + " --policy JSON -- PROGRAM [ARGS...]",
		Short:  "Confine this process with a sandbox policy, then execute PROGRAM (used internally)",
		Hidden: true,
		// The program's own arguments follow "--" and must reach it
		// untouched, so cobra parses nothing.
		DisableFlagParsing: true,
		// Helper has said why on stderr; cobra's usage text would only
		// bury that in the program's output.
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Helper returns only when it could not execute the program,
			// having said why on stderr.
			return exitStatus(sandbox.Helper(args, g.stderr))
		},
	}
}
