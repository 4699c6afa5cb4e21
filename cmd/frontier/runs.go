package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRunsCmd is a placeholder until the runs command lands.
func newRunsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "runs",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("runs: not built yet")
		},
	}
}
