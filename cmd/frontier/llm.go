package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLLMCmd is a placeholder until the llm commands land.
func newLLMCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "llm",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("llm: not built yet")
		},
	}
}
