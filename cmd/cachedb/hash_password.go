package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cachedb/cachedb/internal/auth"
)

func newHashPasswordCommand() *cobra.Command {
	var cost int
	cmd := &cobra.Command{
		Use:   "hash-password",
		Short: "Print the bcrypt hash of a password, for the password_hash of a --users file",
		Long: "Asks for the password twice on a terminal, or reads one line from standard input,\n" +
			"and prints its bcrypt hash. The password itself is never printed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			password, err := readNewPassword(cmd)
			if err != nil {
				return err
			}
			h, err := auth.HashPassword(password, cost)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), h)
			return nil
		},
	}
	cmd.Flags().IntVar(&cost, "cost", 12, "bcrypt cost: each step doubles the time a login (and a guess) takes")
	return cmd
}

// readNewPassword asks for a password twice on a terminal, or reads the first line of a pipe.
func readNewPassword(cmd *cobra.Command) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		read := func(prompt string) (string, error) {
			fmt.Fprint(cmd.ErrOrStderr(), prompt)
			pw, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(cmd.ErrOrStderr())
			return string(pw), err
		}
		first, err := read("password: ")
		if err != nil {
			return "", err
		}
		again, err := read("again: ")
		if err != nil {
			return "", err
		}
		if first != again {
			return "", fmt.Errorf("the passwords differ")
		}
		return first, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("reading the password from standard input: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
