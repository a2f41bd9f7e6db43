package storage_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/catalog/iceberg/storage"
)

func TestConfigPropertiesRoundTrip(t *testing.T) {
	cases := []storage.Config{
		{},
		{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", AccessKeyID: "AK", SecretAccessKey: "SK", SessionToken: "TOK"},
		{PathStyle: storage.Bool(false), MaxAttempts: 3, MaxBackoff: 250 * time.Millisecond, ConnectTimeout: 2 * time.Second},
		{Endpoint: "https://s3.example.com", PathStyle: storage.Bool(true)},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			props := c.Properties()
			got, err := storage.ParseProperties(props)
			if err != nil {
				t.Fatalf("ParseProperties(%v): %v", props, err)
			}
			if got.String() != c.String() || !maps.Equal(got.Properties(), props) {
				t.Fatalf("round trip changed the config:\n got %v %v\nwant %v %v", got, got.Properties(), c, props)
			}
			if (got.PathStyle == nil) != (c.PathStyle == nil) || got.UsePathStyle() != c.UsePathStyle() {
				t.Fatalf("path style: got %v, want %v", got.PathStyle, c.PathStyle)
			}
		})
	}
}

func TestConfigPropertyKeys(t *testing.T) {
	c := storage.Config{Endpoint: "http://e", Region: "r", AccessKeyID: "a", SecretAccessKey: "s",
		SessionToken: "t", PathStyle: storage.Bool(true), MaxAttempts: 7}
	want := map[string]string{
		"s3.endpoint": "http://e", "s3.region": "r", "s3.access-key-id": "a",
		"s3.secret-access-key": "s", "s3.session-token": "t", "s3.path-style-access": "true",
		"cachedb.s3.max-attempts": "7",
	}
	if got := c.Properties(); !maps.Equal(got, want) {
		t.Fatalf("Properties() = %v, want %v", got, want)
	}
}

func TestConfigFromIcebergGoProperties(t *testing.T) {
	c := storage.ConfigFromProperties(map[string]string{
		"client.region":               "ap-south-1",
		"s3.force-virtual-addressing": "true",
		"s3.endpoint":                 "http://minio:9000",
		"s3.connect-timeout":          "1.5",
	})
	if c.Region != "ap-south-1" || c.UsePathStyle() || c.ConnectTimeout != 1500*time.Millisecond {
		t.Fatalf("got %+v", c)
	}
	// Path style with an endpoint is the default.
	if !storage.ConfigFromProperties(map[string]string{"s3.endpoint": "http://minio:9000"}).UsePathStyle() {
		t.Fatal("a custom endpoint should default to path-style addressing")
	}
	if storage.ConfigFromProperties(nil).UsePathStyle() {
		t.Fatal("AWS (no endpoint) should default to virtual-hosted addressing")
	}
}

func TestParsePropertiesReportsBadValues(t *testing.T) {
	for key, v := range map[string]string{
		"cachedb.s3.max-attempts": "many",
		"s3.path-style-access":    "sometimes",
		"s3.connect-timeout":      "-3",
	} {
		c, err := storage.ParseProperties(map[string]string{key: v, "s3.region": "r"})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: error %v, want one naming the key", key, v, err)
		}
		if c.Region != "r" {
			t.Errorf("%s=%q: the values that parsed were lost: %+v", key, v, c)
		}
		if got := storage.ConfigFromProperties(map[string]string{key: v}); got.String() != (storage.Config{}).String() {
			t.Errorf("ConfigFromProperties(%s=%q) = %v, want defaults", key, v, got)
		}
	}
}

func TestConfigNeverShowsSecrets(t *testing.T) {
	c := storage.Config{Endpoint: "http://e", AccessKeyID: "AKIDVISIBLE", SecretAccessKey: "sekrit-key-123", SessionToken: "sess-tok-456"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "s3", c)
	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprint(&c), logged.String()} {
		if strings.Contains(s, c.SecretAccessKey) || strings.Contains(s, c.SessionToken) {
			t.Errorf("secret shown: %s", s)
		}
		if !strings.Contains(s, "AKIDVISIBLE") {
			t.Errorf("access key id should identify the config: %s", s)
		}
	}
}
