package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newEditCmd is a placeholder until the edit commands land.
func newEditCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "edit",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("edit: not built yet")
		},
	}
}
