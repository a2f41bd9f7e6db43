package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestTakeStatement(t *testing.T) {
	tests := []struct {
		text, stmt, rest string
		vertical, ok     bool
	}{
		{"SELECT 1\n", "", "SELECT 1\n", false, false},
		{"SELECT\n  1;\n", "SELECT\n  1", "\n", false, true},
		{"SELECT 1; SELECT 2;", "SELECT 1", " SELECT 2;", false, true},
		{"SELECT 1\\G\n", "SELECT 1", "\n", true, true},
		{"SELECT 1\\g", "SELECT 1", "", false, true},
		{"SELECT 'a;\\G' AS s\n", "", "SELECT 'a;\\G' AS s\n", false, false},
		{"SELECT 1 -- ;\n", "", "SELECT 1 -- ;\n", false, false},
		{";", "", "", false, true},
	}
	for _, tt := range tests {
		stmt, vertical, rest, ok := takeStatement(tt.text)
		if stmt != tt.stmt || vertical != tt.vertical || rest != tt.rest || ok != tt.ok {
			t.Errorf("takeStatement(%q) = %q, %v, %q, %v; want %q, %v, %q, %v",
				tt.text, stmt, vertical, rest, ok, tt.stmt, tt.vertical, tt.rest, tt.ok)
		}
	}
}

func TestIsBlankLine(t *testing.T) {
	for text, want := range map[string]bool{
		"\n": true, "  \n": true, " -- note\n": true, "# note\n": true, "--\n": true,
		"SELECT 1\n": false, "-- a\nSELECT 1\n": false, "'-- x\n": false, "--x\n": false,
	} {
		if got := isBlankLine(text); got != want {
			t.Errorf("isBlankLine(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestShellCommand(t *testing.T) {
	for _, tt := range []struct {
		text    string
		atStart bool
		want    shellCmd
	}{
		{"help", true, cmdHelp}, {" HELP; ", true, cmdHelp}, {`\h`, true, cmdHelp},
		{"exit", true, cmdQuit}, {"quit;", true, cmdQuit}, {`\q`, false, cmdQuit},
		{`\c`, false, cmdClear}, {"exit", false, cmdNone}, {"help me", true, cmdNone},
		{"SELECT 1;", true, cmdNone},
	} {
		if got := shellCommand(tt.text, tt.atStart); got != tt.want {
			t.Errorf("shellCommand(%q, %v) = %v, want %v", tt.text, tt.atStart, got, tt.want)
		}
	}
}

func TestWriteVertical(t *testing.T) {
	tbl := &resultTable{header: []string{"x", "name"}, rows: [][]string{{"1", "one"}, {"2", "NULL"}}}
	var b strings.Builder
	tbl.writeVertical(&b)
	want := "*************************** 1. row ***************************\n" +
		"   x: 1\nname: one\n" +
		"*************************** 2. row ***************************\n" +
		"   x: 2\nname: NULL\n"
	if b.String() != want {
		t.Errorf("writeVertical:\n%s\nwant:\n%s", b.String(), want)
	}
}

// terminal is a process running on a pseudo-terminal, with everything it wrote to the screen.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	mark int // expect searches the screen output from here on
}

// startTerminal runs cachedb with args on an 50x200 pseudo-terminal.
func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), append([]string{"TERM=xterm"}, env...)...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, tty: tty}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		tty.Close()
	})
	return term
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// screen is what the process wrote, without terminal escape sequences and carriage returns.
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return strings.ReplaceAll(ansiEscape.ReplaceAllString(term.out.String(), ""), "\r", "")
}

// expect waits until want appears on the screen after the previous expectation's match, and
// returns the screen text from there up to and including the match.
func (term *terminal) expect(want string) string {
	term.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := term.screen()
		if i := strings.Index(s[term.mark:], want); i >= 0 {
			got := s[term.mark : term.mark+i+len(want)]
			term.mark += i + len(want)
			return got
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen never showed %q; after the last match it shows:\n%s", want, s[term.mark:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// typeLine types text and Enter (a carriage return, as a terminal sends it).
func (term *terminal) typeLine(text string) {
	term.t.Helper()
	if _, err := io.WriteString(term.tty, text+"\r"); err != nil {
		term.t.Fatal(err)
	}
}

// An interactive session as a user types it: prompts, a multi-line statement, \G, an error
// that leaves the shell running, Ctrl-C discarding a statement, help, \q, and the history file
// it leaves behind.
func TestInteractiveShell(t *testing.T) {
	srv, addr := startServe(t, "--no-warehouse")
	defer stopServe(t, srv)
	state := t.TempDir()
	term := startTerminal(t, []string{"XDG_STATE_HOME=" + state}, "sql", "--connect", addr)

	term.expect("Type 'help' for help")
	term.expect("cachedb> ")
	term.typeLine("CREATE TABLE shell_t (x BIGINT, name VARCHAR(10));")
	term.expect("Query OK")
	term.expect(" sec)")
	term.expect("cachedb> ")
	term.typeLine("INSERT INTO shell_t VALUES (1, 'one'), (2, 'two');")
	term.expect("Query OK, 2 rows affected (")

	term.expect("cachedb> ")
	term.typeLine("SELECT x, name")
	term.expect("     -> ")
	term.typeLine("FROM shell_t")
	term.expect("     -> ")
	term.typeLine("ORDER BY x;")
	got := term.expect("2 rows in set (")
	for _, row := range []string{"| x | name |", "| 1 | one  |", "| 2 | two  |"} {
		if !strings.Contains(got, row) {
			t.Errorf("the multi-line SELECT printed no %q:\n%s", row, got)
		}
	}

	term.expect("cachedb> ")
	term.typeLine(`SELECT x, name FROM shell_t WHERE x = 2\G`)
	got = term.expect("1 row in set (")
	if !strings.Contains(got, "*************************** 1. row ***************************\n   x: 2\nname: two\n") {
		t.Errorf("\\G did not print the row vertically:\n%s", got)
	}

	term.expect("cachedb> ")
	term.typeLine("SELECT * FROM no_such_table;")
	got = term.expect("ERROR (")
	got += term.expect("\n")
	if !strings.Contains(got, "no_such_table") {
		t.Errorf("the error does not name the missing table:\n%s", got)
	}
	// Ctrl-C at the continuation prompt discards the statement being typed.
	term.expect("cachedb> ")
	term.typeLine("SELECT 1")
	term.expect("     -> ")
	if _, err := io.WriteString(term.tty, "\x03"); err != nil {
		t.Fatal(err)
	}
	term.expect("cachedb> ")
	term.typeLine("SELECT 40 + 2 AS answer;")
	term.expect("|     42 |")

	term.expect("cachedb> ")
	term.typeLine("help")
	term.expect(`exit, quit, \q   leave the shell`)
	term.expect("cachedb> ")
	term.typeLine(`\q`)
	term.expect("Bye")

	done := make(chan error, 1)
	go func() { done <- term.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the shell exited with %v after \\q, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the shell did not exit after \\q")
	}

	history, err := os.ReadFile(filepath.Join(state, "cachedb", "history"))
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range []string{"SELECT x, name FROM shell_t ORDER BY x;", `SELECT x, name FROM shell_t WHERE x = 2\G`, `\q`} {
		if !strings.Contains(string(history), entry+"\n") {
			t.Errorf("the history lacks %q:\n%s", entry, history)
		}
	}
}
