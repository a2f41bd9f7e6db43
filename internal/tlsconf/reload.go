// Package tlsconf builds the TLS configurations of cachedb's servers and clients from PEM files:
// a certificate pair that is re-read when its files change, so a renewed certificate (by
// cert-manager, certbot, a mounted Secret) is served without a restart, and the CA bundles that
// verify peers.
package tlsconf

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// Pair is a certificate and its private key, read from two PEM files. Certificate re-reads them
// when either file's modification time or size changed since the pair was last loaded; a pair
// that fails to load then (a renewal caught half written, a key that does not match) leaves the
// previous certificate in service and is tried again at the next handshake. Safe for concurrent
// use.
type Pair struct {
	certFile, keyFile string

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded [2]fileStamp // of certFile and keyFile when cert was loaded
	// failed is the stamps of a change that failed to load, so it is reported once, not at
	// every handshake.
	failed [2]fileStamp
	// OnReload, when set, is told about every reload: err nil when the new pair serves.
	onReload func(err error)
}

// fileStamp is what tells a changed file: its modification time and size.
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

// LoadPair reads the pair once; an error names the file that is wrong. onReload (may be nil)
// hears of every later reload, successful or not.
func LoadPair(certFile, keyFile string, onReload func(err error)) (*Pair, error) {
	p := &Pair{certFile: certFile, keyFile: keyFile, onReload: onReload}
	stamps, cert, err := p.read()
	if err != nil {
		return nil, err
	}
	p.cert, p.loaded = cert, stamps
	return p, nil
}

// read loads both files and their stamps (taken before reading, so a write that lands during the
// read is seen as a change next time).
func (p *Pair) read() ([2]fileStamp, *tls.Certificate, error) {
	var stamps [2]fileStamp
	for i, path := range []string{p.certFile, p.keyFile} {
		st, err := stampOf(path)
		if err != nil {
			return stamps, nil, fmt.Errorf("TLS certificate: %w", err)
		}
		stamps[i] = st
	}
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		// The error of crypto/tls names what is wrong with the PEM, never the key's bytes.
		return stamps, nil, fmt.Errorf("TLS certificate %s with key %s: %w", p.certFile, p.keyFile, err)
	}
	return stamps, &cert, nil
}

// Certificate returns the pair to present, re-reading the files first when they changed.
func (p *Pair) Certificate() (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var now [2]fileStamp
	for i, path := range []string{p.certFile, p.keyFile} {
		st, err := stampOf(path)
		if err != nil {
			// A file replaced by rename may be missing for an instant: keep serving.
			return p.cert, nil
		}
		now[i] = st
	}
	if now == p.loaded || now == p.failed {
		return p.cert, nil
	}
	stamps, cert, err := p.read()
	if err != nil {
		p.failed = now
		if p.onReload != nil {
			p.onReload(err)
		}
		return p.cert, nil
	}
	p.cert, p.loaded, p.failed = cert, stamps, [2]fileStamp{}
	if p.onReload != nil {
		p.onReload(nil)
	}
	return p.cert, nil
}
