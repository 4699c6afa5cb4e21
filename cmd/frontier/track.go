package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newTrackCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "track",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("track: not built yet")
		},
	}
}
