// Command cachedb runs the cachedb server (serve, or head and worker for a cluster) and a
// small SQL client (sql).
//
// Every flag may also come from the environment: --listen from CACHEDB_LISTEN, --connect from
// CACHEDB_CONNECT, and so on (upper case, dashes as underscores). A flag given on the command
// line wins over the environment.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix prefixes the environment variables that stand in for flags.
const envPrefix = "CACHEDB_"

func main() {
	root := newRootCommand()
	if role := filepath.Base(os.Args[0]); role == "head" || role == "worker" {
		// Run as `head …` or `worker …` (links named so, as Kubeflow Trainer's data cache
		// pods' commands are): the role is the subcommand.
		root.SetArgs(append([]string{role}, os.Args[1:]...))
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "cachedb:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var logs logFlags
	root := &cobra.Command{
		Use:           "cachedb",
		Short:         "cachedb: an Arrow-native SQL engine served over Flight SQL",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := flagsFromEnv(cmd.Flags(), os.LookupEnv); err != nil {
				return err
			}
			return logs.install()
		},
	}
	logs.register(root)
	root.AddCommand(newServeCommand(), newHeadCommand(), newWorkerCommand(), newSQLCommand(), newLoadCommand(), newHashPasswordCommand(), newVersionCommand())
	return root
}

// flagsFromEnv sets every flag not given on the command line from its CACHEDB_* variable.
func flagsFromEnv(flags *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var firstErr error
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || firstErr != nil {
			return
		}
		name := envName(f.Name)
		if secret, ok := f.Value.(*secretValue); ok {
			if v, ok := lookup(name); ok {
				secret.setFromEnv(v)
			}
			return
		}
		if v, ok := lookup(name); ok {
			if err := flags.Set(f.Name, v); err != nil {
				firstErr = fmt.Errorf("environment variable %s=%q: %w", name, v, err)
			}
		}
	})
	return firstErr
}
