package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDataCmd is a placeholder until the data commands land.
func newDataCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "data",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("data: not built yet")
		},
	}
}
