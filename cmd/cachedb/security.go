package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/flightsql"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/tlsconf"
)

// securityFlags are the TLS and login flags of the commands that serve Flight (serve, head,
// worker).
type securityFlags struct {
	cert, key, clientCA, ca string
	insecure                bool
	users                   string
	tokenTTL                time.Duration
	jwt                     auth.JWTConfig
	jwtDefaultRole          string
	serviceToken            secretValue
	serviceTokenRole        string
	revocations             string
}

func (s *securityFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.cert, "tls-cert", "", "PEM certificate (chain) to serve TLS with; re-read when the file changes. It must name every address clients and the cluster dial this process at")
	f.StringVar(&s.key, "tls-key", "", "PEM private key of --tls-cert; re-read when the file changes")
	f.StringVar(&s.clientCA, "tls-client-ca", "", "PEM bundle of CAs: require every client (and every peer of the cluster) to present a certificate they signed (mutual TLS)")
	f.StringVar(&s.ca, "tls-ca", "", "PEM bundle of CAs this process trusts when it dials the other processes of its cluster (default: the system's roots); it presents its own --tls-cert to them")
	f.BoolVar(&s.insecure, "insecure", false, "serve plaintext (no TLS) on an address other than loopback")
	f.StringVar(&s.users, "users", "", "YAML or JSON file of the users who may log in (name, bcrypt password_hash, roles: none, reader, writer, admin; groups); without it no login is required. Give every process of a cluster the same file")
	f.DurationVar(&s.tokenTTL, "token-ttl", auth.DefaultTokenTTL, "how long the bearer token of a login is valid; clients log in again after it")
	f.StringVar(&s.jwt.KeysFile, "jwt-keys", "", "JWKS file (JSON) of the public keys that sign the JSON Web Tokens clients may send as bearer tokens (an OIDC provider's, Kubernetes service-account tokens); with it every client must log in. Give every process of a cluster the same file")
	f.StringVar(&s.jwt.Issuer, "jwt-issuer", "", "the iss a JWT must carry (default: any)")
	f.StringVar(&s.jwt.Audience, "jwt-audience", "", "an aud a JWT must carry (default: any)")
	f.StringVar(&s.jwt.UserClaim, "jwt-user-claim", auth.DefaultUserClaim, "the JWT claim that is the user's name")
	f.StringVar(&s.jwt.RoleClaim, "jwt-role-claim", auth.DefaultRoleClaim, "the JWT claim holding the user's role (reader, writer, admin; or a list of them, the highest counts)")
	f.StringVar(&s.jwt.GroupsClaim, "jwt-groups-claim", auth.DefaultGroupsClaim, "the JWT claim holding the user's groups (a name or a list), which the configuration's grants may name")
	registerSecret(f, &s.serviceToken, "service-token", "a bearer token of at least 32 characters that clients may present to act as user service (a Secret shared with them, e.g. a Kubeflow trainer's); with it every client must log in. Give every process of a cluster the same token")
	f.StringVar(&s.serviceTokenRole, "service-token-role", auth.Reader.String(), "the role of the service token's bearer (none, reader, writer, admin)")
	f.StringVar(&s.revocations, "revocations", "", "YAML or JSON file of revoked tokens (revoked: a user's tokens issued before a time, or all of a user's), re-read when it changes. Give every process of a cluster the same file")
	f.StringVar(&s.jwtDefaultRole, "jwt-default-role", "", "the role of a JWT without a role claim (none, reader, writer, admin; default: such a token is refused)")
}

// security is how a server protects its port and reaches the rest of its cluster.
type security struct {
	// tls is the server's configuration; nil serves plaintext.
	tls *tls.Config
	// cluster is how this process dials the head or the data nodes: TLS exactly when it serves
	// TLS, since every process of a cluster serves alike.
	cluster cluster.Transport
	// users may log in; nil requires no login.
	users    *auth.Users
	tokenTTL time.Duration
	// jwts verifies JSON Web Tokens; nil accepts none.
	jwts *auth.JWTs
	// serviceToken is the deployment's shared bearer token; nil accepts none.
	serviceToken *auth.ServiceToken
	// revocations refuses revoked tokens; nil refuses none.
	revocations *auth.Revocations
	// grants raise users' roles on particular catalogs and datasets (a head's configuration).
	grants *auth.Grants
}

// resolve checks the flags against the address the server listens on. Plaintext is served only
// with --insecure or on a loopback address, and logged as a warning either way.
func (s *securityFlags) resolve(listen string) (security, error) {
	sec, err := s.resolveTLS(listen)
	if err != nil {
		return security{}, err
	}
	if s.tokenTTL <= 0 {
		return security{}, fmt.Errorf("--token-ttl %s: want a positive duration", s.tokenTTL)
	}
	sec.tokenTTL = s.tokenTTL
	if s.users != "" {
		if sec.users, err = auth.LoadUsers(s.users); err != nil {
			return security{}, err
		}
	}
	if s.jwtDefaultRole != "" {
		if s.jwt.DefaultRole, err = auth.ParseRole(s.jwtDefaultRole); err != nil {
			return security{}, fmt.Errorf("--jwt-default-role: %w", err)
		}
	}
	token, err := s.serviceToken.get()
	if err != nil {
		return security{}, err
	}
	if token != "" {
		role, err := auth.ParseRole(s.serviceTokenRole)
		if err != nil {
			return security{}, fmt.Errorf("--service-token-role: %w", err)
		}
		if sec.serviceToken, err = auth.NewServiceToken(token, role); err != nil {
			return security{}, err
		}
	}
	if s.jwt.KeysFile != "" {
		if sec.jwts, err = auth.LoadJWTs(s.jwt); err != nil {
			return security{}, err
		}
	} else if s.jwt.Issuer != "" || s.jwt.Audience != "" || s.jwtDefaultRole != "" {
		return security{}, fmt.Errorf("--jwt-issuer, --jwt-audience and --jwt-default-role need --jwt-keys")
	}
	if s.revocations != "" {
		if !sec.loginsRequired() {
			return security{}, fmt.Errorf("--revocations needs logins (--users, --jwt-keys or --service-token-file): without them no token is needed")
		}
		path := s.revocations
		if sec.revocations, err = auth.LoadRevocations(path, func(err error) {
			if err != nil {
				slog.Warn("revocations file changed but cannot be loaded; the previous list stays in force", "err", err)
				return
			}
			slog.Info("revocations reloaded", "file", path)
		}); err != nil {
			return security{}, err
		}
	}
	return sec, nil
}

func (s *securityFlags) resolveTLS(listen string) (security, error) {
	if (s.cert == "") != (s.key == "") {
		return security{}, fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	if s.cert == "" {
		switch {
		case s.clientCA != "":
			return security{}, fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked in a TLS handshake")
		case s.ca != "":
			return security{}, fmt.Errorf("--tls-ca needs --tls-cert and --tls-key: the cluster speaks TLS only when its processes serve it")
		case !s.insecure && !isLoopback(listen):
			return security{}, fmt.Errorf("refusing to serve plaintext on %s, which other hosts can reach: give --tls-cert and --tls-key, or --insecure to serve plaintext anyway", listen)
		}
		return security{}, nil
	}
	if s.insecure {
		return security{}, fmt.Errorf("--insecure and --tls-cert contradict each other: give one")
	}
	pair, err := tlsconf.LoadPair(s.cert, s.key, func(err error) {
		if err != nil {
			slog.Warn("TLS certificate changed but cannot be loaded; still serving the previous one", "err", err)
			return
		}
		slog.Info("TLS certificate reloaded", "cert", s.cert)
	})
	if err != nil {
		return security{}, err
	}
	server, err := tlsconf.Server(pair, s.clientCA)
	if err != nil {
		return security{}, err
	}
	client, err := tlsconf.Client(s.ca, pair)
	if err != nil {
		return security{}, err
	}
	return security{tls: server, cluster: cluster.Transport{TLS: client}}, nil
}

// apply sets the server's side on opts.
func (s security) apply(opts flightsql.Options) flightsql.Options {
	opts.TLS = s.tls
	opts.Users = s.users
	opts.JWTs = s.jwts
	opts.ServiceToken = s.serviceToken
	opts.Revocations = s.revocations
	opts.Grants = s.grants
	opts.TokenTTL = s.tokenTTL
	return opts
}

// loginsRequired reports whether clients must log in: users, JWT keys or a service token.
func (s security) loginsRequired() bool {
	return s.users != nil || s.jwts != nil || s.serviceToken != nil
}

// withGrants returns s with the grants of a head's configuration, which need logins to mean
// anything.
func (s security) withGrants(cfg serverConfig) (security, error) {
	grants, err := cfg.grants()
	if err != nil {
		return security{}, err
	}
	if grants.Len() > 0 && !s.loginsRequired() {
		return security{}, fmt.Errorf("the configuration's grants need logins: give --users or --jwt-keys")
	}
	s.grants = grants
	return s, nil
}

// checkGrants checks that the catalogs grants name exactly are configured.
func (s security) checkGrants(catalogs *catalog.Set) error {
	for _, name := range s.grants.Catalogs() {
		if _, ok := catalogs.Lookup(name); !ok {
			return fmt.Errorf("grants: catalog %q is not configured (the catalogs are %s)", name, catalogNames(catalogs))
		}
	}
	return nil
}

func catalogNames(catalogs *catalog.Set) string {
	var names []string
	for _, c := range catalogs.Catalogs() {
		names = append(names, c.Name())
	}
	return strings.Join(names, ", ")
}

// logAttrs describe the security of a server in its "listening" line.
func (s security) logAttrs() []any {
	mode := "plaintext"
	if s.tls != nil {
		mode = "tls"
		if s.tls.ClientAuth == tls.RequireAndVerifyClientCert {
			mode = "mutual tls"
		}
	}
	var kinds []string
	if s.users != nil {
		kinds = append(kinds, fmt.Sprintf("%d users", len(s.users.Names())))
	}
	if s.jwts != nil {
		kinds = append(kinds, "JWTs")
	}
	if s.serviceToken != nil {
		kinds = append(kinds, "a service token")
	}
	logins := "none required"
	if len(kinds) > 0 {
		logins = strings.Join(kinds, " and ")
	}
	attrs := []any{"transport", mode, "logins", logins}
	if n := s.grants.Len(); n > 0 {
		attrs = append(attrs, "grants", n)
	}
	if s.revocations != nil {
		attrs = append(attrs, "revoked_users", s.revocations.Len())
	}
	return attrs
}

// warn logs, once at start, what the server leaves unprotected.
func (s security) warn(what, addr string) {
	if s.tls == nil {
		slog.Warn(what+" serves plaintext: anyone who can reach "+addr+" can read and alter its traffic; give --tls-cert and --tls-key to encrypt it", "addr", addr)
	}
	if !s.loginsRequired() {
		slog.Warn(what+" requires no login: anyone who can reach "+addr+" can query, change and drop tables and datasets; give --users to require one", "addr", addr)
	}
}

// isLoopback reports whether a listen address (HOST:PORT) accepts connections from this host
// only.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
