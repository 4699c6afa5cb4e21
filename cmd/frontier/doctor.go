package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newDoctorCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "doctor",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("doctor: not built yet")
		},
	}
}
