// Package storage is cachedb's object-store access for Iceberg reads and writes. It implements
// iceberg-go's io.IO for s3:// (and its Hadoop spellings s3a://, s3n://) on aws-sdk-go-v2, so
// that retries, ranged reads and byte accounting are cachedb's own, and it wraps any io.IO
// (local or S3) to count the bytes and requests a query costs.
package storage

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Property keys understood by ConfigFromProperties and written by Config.Properties. The s3.*
// keys are iceberg-go's (and Iceberg's REST catalog's, which may vend them per table); the
// cachedb.s3.* keys are cachedb's own.
const (
	PropEndpoint        = "s3.endpoint"
	PropRegion          = "s3.region"
	PropClientRegion    = "client.region" // fallback for PropRegion, as iceberg-go reads it
	PropAccessKeyID     = "s3.access-key-id"
	PropSecretAccessKey = "s3.secret-access-key"
	PropSessionToken    = "s3.session-token"
	PropPathStyle       = "s3.path-style-access"
	// PropForceVirtual is iceberg-go's inverse of PropPathStyle; PropPathStyle wins when both
	// are set.
	PropForceVirtual   = "s3.force-virtual-addressing"
	PropConnectTimeout = "s3.connect-timeout"
	PropMaxAttempts    = "cachedb.s3.max-attempts"
	PropMaxBackoff     = "cachedb.s3.max-backoff"
)

// Defaults applied to zero Config fields.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxBackoff     = 20 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	// DefaultRegion is used when neither the Config nor the AWS environment names one; S3
	// compatible stores (MinIO) accept any region.
	DefaultRegion = "us-east-1"
)

// Config says how to reach an S3 (or S3-compatible) store. The zero Config means "AWS S3 with
// the default credential chain".
type Config struct {
	// Endpoint is a custom endpoint URL such as http://127.0.0.1:9000 (MinIO). Empty means AWS.
	Endpoint string
	// Region is the signing region. Empty: the AWS environment's, else DefaultRegion.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken are static credentials. When AccessKeyID is
	// empty, aws-sdk-go-v2's default chain is used: environment, shared config and profile, web
	// identity (IRSA), ECS and EC2 instance roles.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// PathStyle forces path-style (true: http://endpoint/bucket/key) or virtual-hosted
	// (false: http://bucket.endpoint/key) addressing. Nil: path style exactly when Endpoint is
	// set, which is what MinIO and most S3-compatible stores need.
	PathStyle *bool
	// MaxAttempts bounds the attempts per request, first one included (0: DefaultMaxAttempts).
	// Throttling (503 SlowDown), 5xx answers, connection failures and bodies cut off mid-read
	// are retried with exponential backoff and jitter.
	MaxAttempts int
	// MaxBackoff caps the delay between attempts (0: DefaultMaxBackoff).
	MaxBackoff time.Duration
	// ConnectTimeout bounds establishing one connection (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
}

// Bool returns a pointer to v, for Config.PathStyle.
func Bool(v bool) *bool { return &v }

// UsePathStyle resolves PathStyle against its default.
func (c Config) UsePathStyle() bool {
	if c.PathStyle != nil {
		return *c.PathStyle
	}
	return c.Endpoint != ""
}

func (c Config) maxAttempts() int {
	if c.MaxAttempts > 0 {
		return c.MaxAttempts
	}
	return DefaultMaxAttempts
}

func (c Config) maxBackoff() time.Duration {
	if c.MaxBackoff > 0 {
		return c.MaxBackoff
	}
	return DefaultMaxBackoff
}

func (c Config) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// secrets lists the values that must never be shown.
func (c Config) secrets() []string {
	var s []string
	if c.SecretAccessKey != "" {
		s = append(s, c.SecretAccessKey)
	}
	if c.SessionToken != "" {
		s = append(s, c.SessionToken)
	}
	return s
}

const redacted = "***"

// String describes the configuration with the secret key and session token redacted. The
// access key id is shown: it identifies, it does not authenticate.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("s3{")
	sep := ""
	add := func(k, v string) {
		b.WriteString(sep + k + "=" + v)
		sep = " "
	}
	if c.Endpoint != "" {
		add("endpoint", c.Endpoint)
	}
	if c.Region != "" {
		add("region", c.Region)
	}
	if c.AccessKeyID != "" {
		add("access-key-id", c.AccessKeyID)
	} else {
		add("credentials", "default-chain")
	}
	if c.SecretAccessKey != "" {
		add("secret-access-key", redacted)
	}
	if c.SessionToken != "" {
		add("session-token", redacted)
	}
	add("path-style", strconv.FormatBool(c.UsePathStyle()))
	add("max-attempts", strconv.Itoa(c.maxAttempts()))
	b.WriteString("}")
	return b.String()
}

// GoString keeps %#v from printing the secrets.
func (c Config) GoString() string { return "storage.Config" + c.String() }

// LogValue keeps slog from printing the secrets.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Properties renders the configuration as iceberg-go catalog/table properties, the only form in
// which iceberg-go hands configuration to an IO factory. Zero fields are left out.
func (c Config) Properties() map[string]string {
	p := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	set(PropEndpoint, c.Endpoint)
	set(PropRegion, c.Region)
	set(PropAccessKeyID, c.AccessKeyID)
	set(PropSecretAccessKey, c.SecretAccessKey)
	set(PropSessionToken, c.SessionToken)
	if c.PathStyle != nil {
		p[PropPathStyle] = strconv.FormatBool(*c.PathStyle)
	}
	if c.MaxAttempts > 0 {
		p[PropMaxAttempts] = strconv.Itoa(c.MaxAttempts)
	}
	if c.MaxBackoff > 0 {
		p[PropMaxBackoff] = c.MaxBackoff.String()
	}
	if c.ConnectTimeout > 0 {
		p[PropConnectTimeout] = c.ConnectTimeout.String()
	}
	return p
}

// ConfigFromProperties reads a Config from iceberg-go properties (see the Prop* keys). Values
// that do not parse are ignored, leaving the default; ParseProperties reports them instead.
func ConfigFromProperties(props map[string]string) Config {
	c, _ := ParseProperties(props)
	return c
}

// ParseProperties is ConfigFromProperties that also reports the first value that does not
// parse (the Config returned holds every value that did).
func ParseProperties(props map[string]string) (Config, error) {
	c := Config{
		Endpoint:        props[PropEndpoint],
		Region:          props[PropRegion],
		AccessKeyID:     props[PropAccessKeyID],
		SecretAccessKey: props[PropSecretAccessKey],
		SessionToken:    props[PropSessionToken],
	}
	if c.Region == "" {
		c.Region = props[PropClientRegion]
	}
	var firstErr error
	bad := func(key, v, want string) {
		if firstErr == nil {
			// Only non-secret keys are parsed, so the value may be shown.
			firstErr = fmt.Errorf("property %s=%q: want %s", key, v, want)
		}
	}
	if v, ok := props[PropForceVirtual]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			c.PathStyle = Bool(!b)
		} else {
			bad(PropForceVirtual, v, "true or false")
		}
	}
	if v, ok := props[PropPathStyle]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			c.PathStyle = Bool(b)
		} else {
			bad(PropPathStyle, v, "true or false")
		}
	}
	if v, ok := props[PropMaxAttempts]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			c.MaxAttempts = n
		} else {
			bad(PropMaxAttempts, v, "a positive integer")
		}
	}
	if v, ok := props[PropMaxBackoff]; ok {
		if d, err := parseDuration(v); err == nil {
			c.MaxBackoff = d
		} else {
			bad(PropMaxBackoff, v, "a duration such as 2s or a number of seconds")
		}
	}
	if v, ok := props[PropConnectTimeout]; ok {
		if d, err := parseDuration(v); err == nil {
			c.ConnectTimeout = d
		} else {
			bad(PropConnectTimeout, v, "a duration such as 5s or a number of seconds")
		}
	}
	return c, firstErr
}

// parseDuration accepts a Go duration ("5s") or a number of seconds ("60", "0.5"), the two
// forms iceberg-go accepts for s3.connect-timeout.
func parseDuration(v string) (time.Duration, error) {
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("not positive")
	}
	return d, nil
}
