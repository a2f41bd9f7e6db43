package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are the release and the source revision this binary was built from. The
// Makefile (and deploy/Dockerfile) set them with
//
//	-ldflags "-X main.version=$(git describe --tags --always --dirty) -X main.commit=$(git rev-parse HEAD)"
//
// A plain `go build` leaves them empty: the binary then says it is "dev", and takes the commit
// from the VCS stamp the go command records (debug.ReadBuildInfo) when it built from a checkout.
var (
	version = "dev"
	commit  = ""
)

// buildCommit is the commit this binary was built from: the -X stamp, else the go command's VCS
// stamp ("-dirty" added for a modified tree), else "".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && modified {
		rev += "-dirty"
	}
	return rev
}

// versionLine is what `cachedb version` prints: "cachedb VERSION", then " (commit C)" when the
// commit is known.
func versionLine() string {
	line := "cachedb " + version
	if c := buildCommit(); c != "" {
		line += " (commit " + c + ")"
	}
	return line
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the cachedb version and the commit it was built from",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}
