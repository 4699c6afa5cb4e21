package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newReportCmd is a placeholder until the report command lands.
func newReportCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "report",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("report: not built yet")
		},
	}
}
