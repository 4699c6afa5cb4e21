package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd is a placeholder until the demo command lands.
func newDemoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "demo",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("demo: not built yet")
		},
	}
}
