package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/peterh/liner"
)

// The interactive shell's prompts: the first line of a statement, and the lines that continue it.
const (
	shellPrompt        = "cachedb> "
	continuationPrompt = "     -> "
)

const shellHelp = `Statements end with ';' and may span lines. End one with \G instead to print
each row vertically (column: value).

Commands, each on a line of its own:
  help, \h, ?      this text
  exit, quit, \q   leave the shell (Ctrl-D too)
  \c               discard the statement being typed (Ctrl-C too)

Ctrl-C while a statement runs cancels it. Up and Down recall earlier statements,
Ctrl-R searches them; the history is kept in %s.
`

// runShell reads statements from the terminal with line editing and history, and runs each as
// soon as it is terminated. A failing statement prints its error and the shell goes on; the
// shell ends on exit, quit, \q or end of input, and always returns nil for those.
func runShell(ctx context.Context, d *dialer, addr string, out, errOut io.Writer) error {
	sess, err := openSession(ctx, d, addr)
	if err != nil {
		return err
	}
	defer sess.close()

	line := liner.NewLiner()
	defer line.Close()
	line.SetCtrlCAborts(true)
	histFile := historyPath()
	if f, err := os.Open(histFile); err == nil {
		_, _ = line.ReadHistory(f)
		f.Close()
	}
	defer saveHistory(line, histFile, errOut)

	fmt.Fprintf(out, "cachedb shell on %s. Statements end with ';'.\nType 'help' for help, '\\q' to quit.\n\n", addr)
	// SIGINT (Ctrl-C while a statement runs: the terminal is out of raw mode then) cancels the
	// statement and never ends the shell.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	sh := &shell{sess: sess, out: out, errOut: errOut, interrupts: interrupts}
	var pending string // the statement typed so far, one line per line typed
	for {
		prompt := shellPrompt
		if pending != "" {
			prompt = continuationPrompt
		}
		text, err := line.Prompt(prompt)
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			pending = ""
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(out, "Bye")
			return nil
		case err != nil:
			return fmt.Errorf("reading the terminal: %w", err)
		}
		switch shellCommand(text, pending == "") {
		case cmdQuit:
			line.AppendHistory(strings.TrimSpace(text))
			fmt.Fprintln(out, "Bye")
			return nil
		case cmdHelp:
			line.AppendHistory(strings.TrimSpace(text))
			fmt.Fprintf(out, shellHelp+"\n", histFile)
			continue
		case cmdClear:
			pending = ""
			continue
		}
		pending += text + "\n"
		for {
			stmt, vertical, rest, ok := takeStatement(pending)
			if !ok {
				break
			}
			pending = rest
			if stmt == "" {
				continue
			}
			entry := strings.Join(strings.Fields(stmt), " ") + ";"
			if vertical {
				entry = strings.TrimSuffix(entry, ";") + `\G`
			}
			line.AppendHistory(entry)
			sh.execute(ctx, stmt, vertical)
		}
		if isBlankLine(pending) {
			pending = ""
		}
	}
}

// shell runs the statements typed into runShell.
type shell struct {
	sess        *session
	out, errOut io.Writer
	interrupts  chan os.Signal
}

// execute runs one statement and prints its result with the time it took, or its error. An
// interrupt while it runs cancels it.
func (sh *shell) execute(ctx context.Context, stmt string, vertical bool) {
	select {
	case <-sh.interrupts: // one from before the statement started is stale
	default:
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sh.interrupts:
			cancel()
		case <-done:
		}
	}()
	start := time.Now()
	res, err := sh.sess.run(runCtx, stmt)
	elapsed := time.Since(start)
	if err != nil {
		if runCtx.Err() != nil && ctx.Err() == nil {
			fmt.Fprintln(sh.errOut, "Query aborted by Ctrl-C")
		} else {
			printError(sh.errOut, err)
		}
		fmt.Fprintln(sh.errOut)
		return
	}
	res.writeTimed(sh.out, vertical, elapsed)
}

type shellCmd int

const (
	cmdNone shellCmd = iota
	cmdHelp
	cmdQuit
	cmdClear
)

// shellCommand recognizes a line that is a shell command rather than SQL. help and the quit
// words count only at the start of a statement (atStart), where they cannot be SQL; \q and \c
// count anywhere, as in the mysql client.
func shellCommand(text string, atStart bool) shellCmd {
	word := strings.TrimSuffix(strings.TrimSpace(text), ";")
	switch word {
	case `\q`:
		return cmdQuit
	case `\c`:
		return cmdClear
	}
	if !atStart {
		return cmdNone
	}
	switch strings.ToLower(word) {
	case "help", `\h`, "?", `\?`:
		return cmdHelp
	case "exit", "quit":
		return cmdQuit
	}
	return cmdNone
}

// takeStatement finds the first statement in text that is complete: ended by ';', or by \G
// (vertical) or \g, outside quotes and comments. It returns the statement without its
// terminator, trimmed, and the text after the terminator; ok is false when no statement is
// complete yet.
func takeStatement(text string) (stmt string, vertical bool, rest string, ok bool) {
	end, size := -1, 0
	walkSQL(text, func(i int) {
		if end >= 0 {
			return
		}
		switch {
		case text[i] == ';':
			end, size = i, 1
		case text[i] == '\\' && i+1 < len(text) && (text[i+1] == 'G' || text[i+1] == 'g'):
			end, size, vertical = i, 2, text[i+1] == 'G'
		}
	})
	if end < 0 {
		return "", false, text, false
	}
	return strings.TrimSpace(text[:end]), vertical, text[end+size:], true
}

// isBlankLine says whether text is one line of nothing but spaces or a line comment (-- or #),
// as what follows the last ';' of a line often is: it does not start a statement to continue.
func isBlankLine(text string) bool {
	t := strings.TrimSpace(text)
	return !strings.Contains(t, "\n") && (t == "" || t == "--" || strings.HasPrefix(t, "-- ") || strings.HasPrefix(t, "#"))
}

// historyPath is the shell's history file: $XDG_STATE_HOME/cachedb/history when XDG_STATE_HOME
// is set, else ~/.cachedb_history.
func historyPath() string {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "cachedb", "history")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".cachedb_history"
	}
	return filepath.Join(home, ".cachedb_history")
}

// saveHistory writes the last liner.HistoryLimit entries to path, readable only by its owner
// (statements may hold literals worth keeping private). A failure is reported, not fatal.
func saveHistory(line *liner.State, path string, errOut io.Writer) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		fmt.Fprintf(errOut, "cachedb: saving the history: %v\n", err)
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(errOut, "cachedb: saving the history: %v\n", err)
		return
	}
	defer f.Close()
	if _, err := line.WriteHistory(f); err != nil {
		fmt.Fprintf(errOut, "cachedb: saving the history: %v\n", err)
	}
}
