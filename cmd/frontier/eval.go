package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newEvalCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "eval",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("eval: not built yet")
		},
	}
}
