package sql

import (
	"regexp"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// Triggers: vitess does not parse CREATE TRIGGER, so the statement is recognised here. cachedb
// runs no trigger bodies; a trigger whose body is empty (BEGIN END) has no effect to run, so it
// is accepted and recorded, which keeps its name reserved and lets DROP TRIGGER find it. Any
// other body is refused as unsupported rather than stored and silently never fired.

var (
	createTriggerRE = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:DEFINER\s*=\s*\S+\s+)?TRIGGER\s+(IF\s+NOT\s+EXISTS\s+)?` +
		identPattern + `\s+(BEFORE|AFTER)\s+(INSERT|UPDATE|DELETE)\s+ON\s+` + identPattern +
		`\s+FOR\s+EACH\s+ROW\s+(.*?)\s*;?\s*$`)
	dropTriggerRE = regexp.MustCompile(`(?is)^\s*DROP\s+TRIGGER\s+(IF\s+EXISTS\s+)?` + identPattern + `\s*;?\s*$`)
	emptyBodyRE   = regexp.MustCompile(`(?is)^BEGIN\s+END$`)
)

// identPattern matches a possibly schema-qualified, possibly back-quoted name; the last part is
// captured.
const identPattern = "(?:`[^`]+`\\.|[A-Za-z0-9_$]+\\.)?(`[^`]+`|[A-Za-z0-9_$]+)"

// trigger binds CREATE TRIGGER and DROP TRIGGER; ok is false for any other text.
func (b *binder) trigger(text string) (st planner.Statement, ok bool, err error) {
	if m := createTriggerRE.FindStringSubmatch(text); m != nil {
		name, timing, event, table, body := unquote(m[2]), strings.ToUpper(m[3]), strings.ToUpper(m[4]), unquote(m[5]), m[6]
		if !emptyBodyRE.MatchString(body) {
			return nil, true, errs.Unsupportedf("trigger %s: trigger bodies are not supported (only an empty BEGIN END)", name)
		}
		if _, err := b.cat.Table(b.ctx, table); err != nil {
			if errs.CategoryOf(err) == errs.NotFound {
				return nil, true, &errs.Error{Category: errs.NotFound, Msg: "Table '" + table + "' doesn't exist", Err: err}
			}
			return nil, true, err
		}
		return &planner.CreateTrigger{Name: name, Table: table, Timing: timing, Event: event, IfNotExists: m[1] != ""}, true, nil
	}
	if m := dropTriggerRE.FindStringSubmatch(text); m != nil {
		return &planner.DropTrigger{Name: unquote(m[2]), IfExists: m[1] != ""}, true, nil
	}
	return nil, false, nil
}

func unquote(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(name, "`"), "`")
}
