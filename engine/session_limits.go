package engine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/sql"
)

// The system variables a SET statement changes the session's limits with: MySQL's own
// per-session statement timeout, in milliseconds, and cachedb's per-statement memory limit.
const (
	VarMaxExecutionTime = "max_execution_time"
	VarMemoryLimit      = "cachedb_memory_limit"
	// VarSQLMode is MySQL's sql_mode; of its modes, ANSI_QUOTES changes the session.
	VarSQLMode = "sql_mode"
)

// ParseMemoryLimit reads a session memory limit: a byte count or a size ("256MiB", "4GiB");
// "" and "0" mean none. Anything else is an InvalidArgument error naming what was wrong.
func ParseMemoryLimit(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := mempool.ParseBytes(v)
	if err != nil {
		return 0, errs.Invalidf("memory limit: %v", err)
	}
	return n, nil
}

// ParseStatementTimeout reads a session statement timeout: milliseconds ("5000", as MySQL's
// max_execution_time) or a Go duration ("30s", "1m30s"); "" and "0" mean none. A negative or
// unreadable value is an InvalidArgument error.
func ParseStatementTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 || ms > int64(time.Duration(1<<62)/time.Millisecond) {
			return 0, errs.Invalidf("statement timeout: %q milliseconds is out of range (0 means none)", v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errs.Invalidf("statement timeout: %q is neither milliseconds nor a duration (examples: 5000, 30s, 2m)", v)
	}
	if d < 0 {
		return 0, errs.Invalidf("statement timeout: %q is negative (0 means none)", v)
	}
	return d, nil
}

// SetSession reads a SET statement: whether text is one and, if so, the session s becomes.
// SET max_execution_time = <ms> and SET cachedb_memory_limit = '<size>' (in any session scope
// form: SESSION x, @@x, @@session.x; DEFAULT or 0 clears them) change s, and so does SET
// sql_mode (sqlModeANSIQuotes); every other variable is accepted and changes nothing, as MySQL
// clients set many on connecting. The GLOBAL forms of those three are refused: the server's
// limits are its flags, and its dialect is MySQL's default. Like USE, the statement itself
// changes nothing: the server keeps the session.
func (e *Engine) SetSession(text string, s Session) (Session, bool, error) {
	assigns, ok := sql.SessionAssignments(text)
	if !ok {
		return s, false, nil
	}
	for _, a := range assigns {
		if a.Name != VarMaxExecutionTime && a.Name != VarMemoryLimit && a.Name != VarSQLMode {
			continue
		}
		if a.Name == VarSQLMode {
			mode, err := e.sessionSQLMode(s, a)
			if err != nil {
				return s, true, err
			}
			s.SQLMode = mode
			continue
		}
		if a.Global {
			return s, true, errs.Unsupportedf("SET GLOBAL %s: the server's own limits are its flags (--statement-timeout, --memory-limit); SET SESSION %s sets this session's", a.Name, a.Name)
		}
		if a.Expression {
			return s, true, errs.Invalidf("SET %s = %s: the value must be a literal or DEFAULT", a.Name, a.Value)
		}
		value := a.Value
		if a.Default {
			value = ""
		}
		var err error
		switch a.Name {
		case VarMaxExecutionTime:
			s.StatementTimeout, err = ParseStatementTimeout(value)
		default:
			s.MemoryLimit, err = ParseMemoryLimit(value)
		}
		if err != nil {
			return s, true, errs.Invalidf("SET %s = %s: %v", a.Name, a.Value, err)
		}
	}
	return s, true, nil
}

// QueryMemory is the memory group one statement run in ctx reserves from: the process's pool,
// bounded by the session's MemoryLimit when it sets one.
func (e *Engine) QueryMemory(ctx context.Context) *mempool.Group {
	return e.cfg.Pool.Group("this query", SessionFrom(ctx).MemoryLimit)
}
