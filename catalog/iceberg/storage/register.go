package storage

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/cachedb/cachedb/internal/errs"
)

// Schemes are the URI schemes Register claims. s3a and s3n are Hadoop's spellings of s3 and
// address the same objects.
var Schemes = []string{"s3", "s3a", "s3n"}

var registerOnce sync.Once

// Register makes iceberg-go open s3://, s3a:// and s3n:// locations through this package,
// replacing any factory registered for them before (iceberg-go's gocloud one, if linked). It is
// idempotent and safe to call from several packages and goroutines.
func Register() {
	registerOnce.Do(func() {
		for _, scheme := range Schemes {
			iceio.Unregister(scheme)
			iceio.Register(scheme, factory)
		}
	})
}

// factory is iceberg-go's entry point: the only configuration it receives is properties (the
// catalog's merged with the table's). The location's bucket becomes the IO's default bucket for
// names given without a scheme.
func factory(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	if on, _ := strconv.ParseBool(props[iceio.S3RemoteSigningEnabled]); on {
		// Without the remote signer every request would be refused as access denied.
		return nil, errs.Unsupportedf("S3 remote request signing (%s) for %s://%s is not supported",
			iceio.S3RemoteSigningEnabled, parsed.Scheme, parsed.Host)
	}
	cfg, err := ParseProperties(props)
	if err != nil {
		return nil, errs.Invalidf("S3 configuration for %s://%s: %v", parsed.Scheme, parsed.Host, err)
	}
	fs, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	fs.bucket = parsed.Host
	return fs, nil
}

// clientCacheSize bounds the cached clients. Distinct configurations arise from distinct
// endpoints and from credentials a REST catalog vends per table (which rotate), so the cache
// must not grow without bound; an evicted client is simply rebuilt when needed again.
const clientCacheSize = 64

type cachedClient struct {
	key    [sha256.Size]byte
	client *s3.Client
}

// clients caches one S3 client per distinct Config. The key is a SHA-256 digest of the whole
// configuration, so no secret is ever held as, or printed as, a map key.
var clients = struct {
	sync.Mutex
	byKey map[[sha256.Size]byte]*list.Element
	lru   list.List // front = most recently used
}{byKey: map[[sha256.Size]byte]*list.Element{}}

func configKey(c Config) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) {
		// Length-prefix each field so that no two configurations share an encoding.
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(c.Endpoint)
	field(c.Region)
	field(c.AccessKeyID)
	field(c.SecretAccessKey)
	field(c.SessionToken)
	field(strconv.FormatBool(c.UsePathStyle()))
	field(strconv.Itoa(c.maxAttempts()))
	field(c.maxBackoff().String())
	field(c.connectTimeout().String())
	var k [sha256.Size]byte
	copy(k[:], h.Sum(nil))
	return k
}

// clientFor returns the cached client for cfg, building it on first use.
func clientFor(ctx context.Context, cfg Config) (*s3.Client, error) {
	key := configKey(cfg)
	clients.Lock()
	if el, ok := clients.byKey[key]; ok {
		clients.lru.MoveToFront(el)
		c := el.Value.(*cachedClient).client
		clients.Unlock()
		return c, nil
	}
	clients.Unlock()

	// Built outside the lock: loading the default chain may read files. Two goroutines racing
	// on one new configuration both build a client; the first stored wins.
	c, err := newClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	clients.Lock()
	defer clients.Unlock()
	if el, ok := clients.byKey[key]; ok {
		clients.lru.MoveToFront(el)
		return el.Value.(*cachedClient).client, nil
	}
	clients.byKey[key] = clients.lru.PushFront(&cachedClient{key: key, client: c})
	for clients.lru.Len() > clientCacheSize {
		old := clients.lru.Back()
		clients.lru.Remove(old)
		delete(clients.byKey, old.Value.(*cachedClient).key)
	}
	return c, nil
}

func newClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = cfg.connectTimeout() }).
		WithTransportOptions(func(t *http.Transport) {
			// Scans read many files of one bucket in parallel: keep their connections.
			t.MaxIdleConns = 256
			t.MaxIdleConnsPerHost = 256
			t.IdleConnTimeout = 90 * time.Second
		})
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithHTTPClient(httpClient),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.maxAttempts()
				o.MaxBackoff = cfg.maxBackoff()
				o.Backoff = retry.NewExponentialJitterBackoff(cfg.maxBackoff())
				// The default retry quota gives up on retries after a burst of failures
				// across all requests; a scan of many files under throttling needs every
				// request to get its MaxAttempts.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// The SDK's message names the file or variable at fault, never a secret value.
		return nil, errs.Invalidf("loading AWS configuration for %s: %v", cfg, err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.UsePathStyle()
		// Ranged GETs, the bulk of the traffic, carry no whole-object checksum to validate;
		// asking for one on every GET only makes the SDK log that it could not.
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		// Failures reach the caller as errors naming the object; the SDK's own log lines
		// would go to stderr around slog.
		o.Logger = logging.Nop{}
	}), nil
}
