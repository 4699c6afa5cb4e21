package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release this binary was built as, set by the linker
// (make build: -ldflags "-X main.version=$(git describe --tags --always
// --dirty)"); empty in a plain go build, where the module's version and
// the VCS stamp of the build stand in.
var version string

// versionInfo is what this binary is: printed by frontier version and
// doctor, and to be recorded with every result.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion reads the version from the linker's stamp and the build
// information.
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

// String is the version in one word: the release, or "devel" with the
// revision it was built from.
func (v versionInfo) String() string {
	s := v.Version
	if v.Revision != "" && v.Version == "devel" {
		s += "+" + v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			s += "-modified"
		}
	}
	return s
}

func newVersionCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print frontier's version, the revision it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(g.stdout, buildVersion(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as JSON")
	return cmd
}

func runVersion(w io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		return writeJSON(w, v)
	}
	_, err := fmt.Fprintf(w, "frontier %s (%s, %s)\n", v, v.Go, v.Platform)
	return err
}

// writeJSON writes v as indented JSON: every --json output goes through
// it.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
