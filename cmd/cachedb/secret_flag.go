package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// secretValue is a flag that holds a secret (the cluster secret, an S3 secret key, a password).
// A secret given on the command line shows in ps and in shell history, so the flag itself
// refuses a value: the secret comes from the environment (CACHEDB_<NAME>, which flagsFromEnv
// gives it) or from the file named by --<name>-file (a mounted Kubernetes Secret).
type secretValue struct {
	name  string
	value string
	// fromEnv records that the environment gave the value.
	fromEnv bool
	// file is the value of --<name>-file.
	file string
	// onCommandLine records that the command line tried to give the value (which is dropped):
	// get refuses it. Set itself does not fail, since the flag parser would quote the value in
	// its error.
	onCommandLine bool
}

// registerSecret registers --name (refused on the command line; the environment sets it) and
// --name-file on f. what says what the secret is, for the usage text.
func registerSecret(f *pflag.FlagSet, v *secretValue, name, what string) {
	v.name = name
	f.Var(v, name, fmt.Sprintf("%s: set %s or --%s-file, never on the command line (it would show in ps)", what, envName(name), name))
	f.StringVar(&v.file, name+"-file", "", fmt.Sprintf("file holding %s (a mounted Secret); a trailing newline is ignored", what))
}

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func (v *secretValue) Set(string) error {
	v.onCommandLine = true
	return nil
}

// setFromEnv is how flagsFromEnv gives the value.
func (v *secretValue) setFromEnv(s string) {
	v.value, v.fromEnv = s, true
}

func (v *secretValue) String() string {
	if v == nil || v.value == "" {
		return ""
	}
	return "***"
}

func (v *secretValue) Type() string { return "secret" }

// given reports whether the environment, a file or the command line gave the secret.
func (v *secretValue) given() bool { return v.value != "" || v.file != "" || v.onCommandLine }

// get returns the secret: from its file, or the environment ("" when neither gives one).
func (v *secretValue) get() (string, error) {
	if v.onCommandLine {
		return "", fmt.Errorf("--%s: a secret on the command line shows in ps and shell history: set %s or --%s-file instead", v.name, envName(v.name), v.name)
	}
	if v.file == "" {
		return v.value, nil
	}
	if v.fromEnv {
		return "", fmt.Errorf("give %s or --%s-file, not both", envName(v.name), v.name)
	}
	b, err := os.ReadFile(v.file)
	if err != nil {
		return "", fmt.Errorf("--%s-file: %w", v.name, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("--%s-file %s is empty", v.name, v.file)
	}
	return s, nil
}
