package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cachedb/cachedb/internal/errs"
)

// The revocations file (--revocations) is YAML, or JSON:
//
//	revoked:
//	  - user: alice
//	    before: 2026-11-25T12:00:00Z   # her tokens issued before this time (to the second)
//	  - user: mallory                  # every token, whenever issued, and every login
//
// Unknown keys, an entry without a user, a user listed twice and a time that is not RFC 3339
// are errors.
type revocationsFile struct {
	Revoked []revocationEntry `yaml:"revoked"`
}

type revocationEntry struct {
	User   string `yaml:"user"`
	Before string `yaml:"before"`
}

// RevocationCheckEvery is how often, at most, Revocations looks whether its file changed.
const RevocationCheckEvery = time.Second

// Revocations refuses the bearer tokens of users listed in a file, those issued before a time
// or all of them, whichever way they were issued (a login's token, a JWT, the service token,
// which has no issue time and so is refused by any entry for user service). The file is
// re-read when its modification time or size changes, looked at no more than once every
// RevocationCheckEvery; a change that fails to load leaves the previous list in force. Safe for
// concurrent use.
type Revocations struct {
	path     string
	onReload func(error)

	mu        sync.Mutex
	before    map[string]time.Time // user -> tokens issued before it are refused; zero: all
	loaded    fileStamp
	failed    fileStamp
	checkedAt time.Time
}

// fileStamp tells a changed file: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// LoadRevocations reads the file once; onReload (may be nil) hears of every later reload, err
// nil when the new list is in force.
func LoadRevocations(path string, onReload func(error)) (*Revocations, error) {
	r := &Revocations{path: path, onReload: onReload}
	stamp, before, err := r.read()
	if err != nil {
		return nil, err
	}
	r.before, r.loaded = before, stamp
	return r, nil
}

// read loads the file and its stamp (taken first, so a write during the read shows as a change
// next time).
func (r *Revocations) read() (fileStamp, map[string]time.Time, error) {
	stamp, err := stampOf(r.path)
	if err != nil {
		return stamp, nil, fmt.Errorf("revocations file: %w", err)
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		return stamp, nil, fmt.Errorf("revocations file: %w", err)
	}
	before, err := ParseRevocations(data)
	if err != nil {
		return stamp, nil, fmt.Errorf("revocations file %s: %w", r.path, err)
	}
	return stamp, before, nil
}

// ParseRevocations reads the contents of a revocations file: user -> the time before which
// their tokens are refused (zero: all of them).
func ParseRevocations(data []byte) (map[string]time.Time, error) {
	var f revocationsFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out := make(map[string]time.Time, len(f.Revoked))
	for i, e := range f.Revoked {
		if e.User == "" {
			return nil, fmt.Errorf("revoked[%d]: user is required", i)
		}
		if _, dup := out[e.User]; dup {
			return nil, fmt.Errorf("user %q is listed twice", e.User)
		}
		var t time.Time
		if e.Before != "" {
			var err error
			if t, err = time.Parse(time.RFC3339, e.Before); err != nil {
				return nil, fmt.Errorf("user %q: before %q is not an RFC 3339 time (2026-11-25T12:00:00Z)", e.User, e.Before)
			}
		}
		out[e.User] = t
	}
	return out, nil
}

// Check returns nil when p's token may still be used at now, and otherwise an
// errs.Unauthenticated error saying that it was revoked.
func (r *Revocations) Check(p Principal, now time.Time) error {
	before, listed := r.lookup(p.User, now)
	switch {
	case !listed:
		return nil
	case before.IsZero():
		return errs.Unauthenticatedf("the tokens of user %s are revoked", p.User)
	case p.Issued.IsZero() || p.Issued.Before(before):
		return errs.Unauthenticatedf("the token of user %s was revoked (tokens issued before %s are refused): log in again", p.User, before.UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckLogin returns nil when user may log in at now: a user whose every token is revoked may
// not (their new token would be refused).
func (r *Revocations) CheckLogin(user string, now time.Time) error {
	if before, listed := r.lookup(user, now); listed && before.IsZero() {
		return errs.Unauthenticatedf("the tokens of user %s are revoked", user)
	}
	return nil
}

// lookup re-reads the file when it is due and changed, and returns user's entry.
func (r *Revocations) lookup(user string, now time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.checkedAt) >= RevocationCheckEvery || now.Before(r.checkedAt) {
		r.checkedAt = now
		r.reloadLocked()
	}
	before, listed := r.before[user]
	return before, listed
}

func (r *Revocations) reloadLocked() {
	stamp, err := stampOf(r.path)
	if err != nil || stamp == r.loaded || stamp == r.failed {
		// A file replaced by rename may be missing for an instant: keep the list.
		return
	}
	stamp, before, err := r.read()
	if err != nil {
		r.failed = stamp
		if r.onReload != nil {
			r.onReload(err)
		}
		return
	}
	r.before, r.loaded, r.failed = before, stamp, fileStamp{}
	if r.onReload != nil {
		r.onReload(nil)
	}
}

// Len is the number of users listed.
func (r *Revocations) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.before)
}
