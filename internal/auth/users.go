package auth

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// The users file (--users) is YAML, or JSON, which is a subset of it:
//
//	users:
//	  - name: alice
//	    password_hash: "$2a$12$..."   # bcrypt; `cachedb hash-password` makes one
//	    roles: [reader]
//	    groups: [team-a]              # optional; grants may name them
//
// A user's role is the highest of the roles listed (none: only what grants allow). Unknown keys,
// a user named twice, a hash that is not bcrypt and a user without a known role are errors.
type usersFile struct {
	Users []userEntry `yaml:"users"`
}

type userEntry struct {
	Name         string   `yaml:"name"`
	PasswordHash string   `yaml:"password_hash"`
	Roles        []string `yaml:"roles"`
	Groups       []string `yaml:"groups"`
}

// Users are the identities a server accepts. Safe for concurrent use (immutable).
type Users struct {
	byName map[string]user
	// dummy is a bcrypt hash of nothing anyone knows, at the file's highest cost: a login as an
	// unknown user is checked against it, so the answer takes as long as for a known one and
	// does not tell which names exist.
	dummy []byte
}

type user struct {
	hash   []byte
	role   Role
	groups []string
}

// ErrBadLogin is every failed login: the name is unknown or the password is wrong, never which.
var ErrBadLogin = errors.New("the user name or password is wrong")

// LoadUsers reads a users file. Its errors name the file and the entry, never a hash.
func LoadUsers(path string) (*Users, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	u, err := ParseUsers(data)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return u, nil
}

// ParseUsers reads the contents of a users file.
func ParseUsers(data []byte) (*Users, error) {
	var f usersFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(f.Users) == 0 {
		return nil, errors.New("no users: list them under users: (name, password_hash, roles)")
	}
	u := &Users{byName: map[string]user{}}
	maxCost := bcrypt.MinCost
	for i, e := range f.Users {
		where := fmt.Sprintf("users[%d]", i)
		if e.Name == "" {
			return nil, fmt.Errorf("%s: name is required", where)
		}
		where = fmt.Sprintf("user %q", e.Name)
		if _, dup := u.byName[e.Name]; dup {
			return nil, fmt.Errorf("%s is listed twice", where)
		}
		cost, err := bcrypt.Cost([]byte(e.PasswordHash))
		if err != nil {
			return nil, fmt.Errorf("%s: password_hash is not a bcrypt hash (make one with cachedb hash-password)", where)
		}
		maxCost = max(maxCost, cost)
		if len(e.Roles) == 0 {
			return nil, fmt.Errorf("%s: roles is empty: give none, reader, writer or admin", where)
		}
		var role Role
		for _, name := range e.Roles {
			r, err := ParseRole(name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			role = max(role, r)
		}
		for _, g := range e.Groups {
			if g == "" {
				return nil, fmt.Errorf("%s: a group name is empty", where)
			}
		}
		u.byName[e.Name] = user{hash: []byte(e.PasswordHash), role: role, groups: slices.Clone(e.Groups)}
	}
	dummy, err := bcrypt.GenerateFromPassword(randomPassword(), maxCost)
	if err != nil {
		return nil, err
	}
	u.dummy = dummy
	return u, nil
}

// Names lists the users, sorted.
func (u *Users) Names() []string {
	names := make([]string, 0, len(u.byName))
	for n := range u.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Check verifies a login; every failure is ErrBadLogin. It costs one bcrypt comparison whether
// or not the user exists.
func (u *Users) Check(name, password string) (Principal, error) {
	entry, known := u.byName[name]
	hash := entry.hash
	if !known {
		hash = u.dummy
	}
	ok := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
	if subtle.ConstantTimeEq(boolInt(ok), 1)&subtle.ConstantTimeEq(boolInt(known), 1) != 1 {
		return Principal{}, ErrBadLogin
	}
	return Principal{User: name, Role: entry.role, Groups: slices.Clone(entry.groups)}, nil
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// HashPassword makes the password_hash of a users file entry (bcrypt at cost, the default 10
// when 0).
func HashPassword(password string, cost int) (string, error) {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	if len(password) == 0 {
		return "", errors.New("the password is empty")
	}
	if len(password) > 72 {
		// bcrypt reads at most 72 bytes; a longer password would be accepted by its prefix.
		return "", errors.New("the password is longer than 72 bytes, which bcrypt cannot hold")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	return string(h), err
}
