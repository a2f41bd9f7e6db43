package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// secretFile writes value to a file of its own and returns the --NAME-file flag naming it: how
// tests give processes a secret.
func secretFile(t *testing.T, name, value string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "--" + name + "-file=" + path
}

func TestSecretsComeFromTheEnvironmentOrFilesNeverFlags(t *testing.T) {
	parse := func(args []string, env map[string]string) (string, error) {
		var v secretValue
		cmd := &cobra.Command{Use: "x"}
		registerSecret(cmd.Flags(), &v, "cluster-secret", "the secret")
		if err := cmd.ParseFlags(args); err != nil {
			return "", err
		}
		if err := flagsFromEnv(cmd.Flags(), func(k string) (string, bool) { s, ok := env[k]; return s, ok }); err != nil {
			return "", err
		}
		return v.get()
	}
	_, err := parse([]string{"--cluster-secret=s3cr3t"}, nil)
	if err == nil || !strings.Contains(err.Error(), "CACHEDB_CLUSTER_SECRET or --cluster-secret-file") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a secret on the command line: %v", err)
	}
	if got, err := parse(nil, map[string]string{"CACHEDB_CLUSTER_SECRET": "from env"}); err != nil || got != "from env" {
		t.Errorf("from the environment: %q, %v", got, err)
	}
	file := secretFile(t, "cluster-secret", "from a file")
	if got, err := parse([]string{file}, nil); err != nil || got != "from a file" {
		t.Errorf("from a file: %q, %v", got, err)
	}
	if _, err := parse([]string{file}, map[string]string{"CACHEDB_CLUSTER_SECRET": "x"}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both: %v", err)
	}
	if _, err := parse([]string{"--cluster-secret-file=" + filepath.Join(t.TempDir(), "missing")}, nil); err == nil {
		t.Error("a missing file was accepted")
	}
	var v secretValue
	v.setFromEnv("hidden")
	if v.String() == "hidden" {
		t.Error("a secret flag prints its value")
	}
}
