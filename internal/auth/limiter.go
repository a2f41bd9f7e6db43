package auth

import (
	"net"
	"sync"
	"time"
)

// Limiter bounds failed logins per client address: each address may fail Burst times, and earns
// one more attempt every Every; while it has none left its logins are refused before the
// password is checked (so a guesser cannot make the server spend bcrypt time either). A
// successful login costs nothing. It holds at most maxTracked addresses: when that many are
// failing at once, the addresses beyond share one allowance. Safe for concurrent use.
type Limiter struct {
	burst int
	every time.Duration

	mu      sync.Mutex
	tracked map[string]*allowance
}

// Default limits of failed logins: 5 at once, then one every 12 s (5 a minute) per address.
const (
	DefaultLoginBurst = 5
	DefaultLoginEvery = 12 * time.Second
	maxTracked        = 1 << 16
	overflowKey       = "(many addresses)"
)

type allowance struct {
	left float64 // attempts left at since
	at   time.Time
}

// NewLimiter allows burst failures per address, one more every every.
func NewLimiter(burst int, every time.Duration) *Limiter {
	return &Limiter{burst: max(burst, 1), every: max(every, time.Nanosecond), tracked: map[string]*allowance{}}
}

// keyOf is the address a limit applies to: the host of HOST:PORT (a client's port changes with
// every connection).
func keyOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// refill brings a's attempts up to now.
func (l *Limiter) refill(a *allowance, now time.Time) {
	if elapsed := now.Sub(a.at); elapsed > 0 {
		a.left = min(float64(l.burst), a.left+float64(elapsed)/float64(l.every))
		a.at = now
	}
}

// Allow reports whether addr may try a login now; when not, how long until it may.
func (l *Limiter) Allow(addr string, now time.Time) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.lookup(keyOf(addr), now, false)
	if a == nil {
		return true, 0
	}
	l.refill(a, now)
	if a.left >= 1 {
		return true, 0
	}
	return false, time.Duration((1-a.left)*float64(l.every)).Round(time.Second) + time.Second
}

// Fail counts one failed login of addr.
func (l *Limiter) Fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.lookup(keyOf(addr), now, true)
	l.refill(a, now)
	a.left = max(a.left-1, 0)
}

// lookup finds key's allowance, making it when create is set. Allowances that are whole again
// are forgotten when the table is full.
func (l *Limiter) lookup(key string, now time.Time, create bool) *allowance {
	if a, ok := l.tracked[key]; ok {
		return a
	}
	if !create {
		if len(l.tracked) >= maxTracked {
			return l.tracked[overflowKey]
		}
		return nil
	}
	if len(l.tracked) >= maxTracked {
		for k, a := range l.tracked {
			if l.refill(a, now); a.left >= float64(l.burst) {
				delete(l.tracked, k)
			}
		}
	}
	if len(l.tracked) >= maxTracked {
		key = overflowKey
		if a, ok := l.tracked[key]; ok {
			return a
		}
	}
	a := &allowance{left: float64(l.burst), at: now}
	l.tracked[key] = a
	return a
}
