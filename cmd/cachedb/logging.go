package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// logFlags choose the level and format of the process's log (log/slog, on stderr).
type logFlags struct {
	level, format string
}

func (l *logFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&l.level, "log-level", "info", "least severe log level written: debug, info, warn or error")
	f.StringVar(&l.format, "log-format", "text", "log line format: text (key=value) or json (one object a line, for log collectors)")
}

// install makes the flags' logger the default one.
func (l logFlags) install() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	switch strings.ToLower(l.format) {
	case "text":
		// slog's default handler: "2006/01/02 15:04:05 INFO message key=value ...", the lines
		// the benchmarks and the docs quote.
		slog.SetLogLoggerLevel(level)
	case "json":
		slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	default:
		return fmt.Errorf("--log-format %q: want text or json", l.format)
	}
	return nil
}
