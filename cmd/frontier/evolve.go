package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newEvolveCmd is a placeholder until the evolve command lands.
func newEvolveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "evolve",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("evolve: not built yet")
		},
	}
}
