package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/cachedb/cachedb/internal/auth"
)

// serverConfig is what `cachedb serve` reads from its YAML file (--config). Flags and CACHEDB_*
// variables override the file's top-level settings; docs/configuration.md documents every key.
type serverConfig struct {
	Listen string `yaml:"listen"`
	// DefaultCatalog is where unqualified and namespace-qualified table names fall back to.
	DefaultCatalog string `yaml:"default_catalog"`
	// S3 holds the object-store settings every catalog starts from.
	S3       s3Config        `yaml:"s3"`
	Catalogs []catalogConfig `yaml:"catalogs"`
	// Grants give users and groups roles on particular catalogs and datasets, besides their
	// role everywhere (docs/security.md#grants).
	Grants []grantConfig `yaml:"grants"`
}

// grantConfig is one entry of grants: a principal (user or group), the tables (a catalog, or
// datasets of cachedb's own catalog by name; a trailing * matches a prefix) and a role.
type grantConfig struct {
	User    string `yaml:"user"`
	Group   string `yaml:"group"`
	Catalog string `yaml:"catalog"`
	Dataset string `yaml:"dataset"`
	Role    string `yaml:"role"`
}

// s3Config is the object-store part of a configuration. Empty keys fall back to the AWS
// default credential chain and region lookup.
type s3Config struct {
	Endpoint        string `yaml:"endpoint"`
	Region          string `yaml:"region"`
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey string `yaml:"secret_access_key"`
	SessionToken    string `yaml:"session_token"`
	PathStyle       *bool  `yaml:"path_style"`
	MaxAttempts     int    `yaml:"max_attempts"`
}

// catalogConfig describes one Iceberg catalog.
type catalogConfig struct {
	Name             string            `yaml:"name"`
	Type             string            `yaml:"type"`
	URI              string            `yaml:"uri"`
	Warehouse        string            `yaml:"warehouse"`
	DefaultNamespace string            `yaml:"default_namespace"`
	Properties       map[string]string `yaml:"properties"`
	Tables           map[string]string `yaml:"tables"`
	// LocationPrefixes are where job specs may also name tables by metadata_location, besides
	// the warehouse and the directories of Tables.
	LocationPrefixes []string `yaml:"location_prefixes"`
	// SplitBytes is the size scan tasks aim at (0: the default, 16 MiB; negative: never split
	// files).
	SplitBytes int64 `yaml:"split_bytes"`
	// S3 overrides the top-level settings key by key.
	S3 *s3Config `yaml:"s3"`
}

// catalogTypes are the values catalogConfig.Type accepts.
var catalogTypes = []string{"sql", "rest", "glue", "files", "embedded"}

// loadConfigFile parses a YAML configuration. Unknown keys are errors, so a misspelt key is
// reported instead of silently ignored.
func loadConfigFile(path string) (serverConfig, error) {
	var cfg serverConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("reading configuration: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("configuration %s: %w", path, err)
	}
	return cfg, cfg.validate()
}

// validate checks what can be checked without contacting anything.
func (c serverConfig) validate() error {
	seen := map[string]bool{}
	for i, cat := range c.Catalogs {
		where := fmt.Sprintf("catalogs[%d]", i)
		if cat.Name == "" {
			return fmt.Errorf("%s: name is required", where)
		}
		key := strings.ToLower(cat.Name)
		if seen[key] {
			return fmt.Errorf("%s: catalog name %q is used twice", where, cat.Name)
		}
		seen[key] = true
		if !slices.Contains(catalogTypes, cat.Type) {
			return fmt.Errorf("catalog %s: type %q is not one of %s", cat.Name, cat.Type, strings.Join(catalogTypes, ", "))
		}
		if cat.Type == "files" && len(cat.Tables) == 0 {
			return fmt.Errorf("catalog %s: type files needs tables (name: metadata.json location)", cat.Name)
		}
		if cat.Type != "files" && len(cat.Tables) > 0 {
			return fmt.Errorf("catalog %s: tables are only for type files", cat.Name)
		}
		if (cat.Type == "sql" || cat.Type == "rest") && cat.URI == "" {
			return fmt.Errorf("catalog %s: type %s needs a uri", cat.Name, cat.Type)
		}
	}
	if c.DefaultCatalog != "" && !seen[strings.ToLower(c.DefaultCatalog)] {
		return fmt.Errorf("default_catalog %q is not among the catalogs", c.DefaultCatalog)
	}
	_, err := c.grants()
	return err
}

// grants reads the grants section (nil when there is none).
func (c serverConfig) grants() (*auth.Grants, error) {
	if len(c.Grants) == 0 {
		return nil, nil
	}
	list := make([]auth.Grant, len(c.Grants))
	for i, g := range c.Grants {
		role, err := auth.ParseRole(g.Role)
		if err != nil {
			return nil, fmt.Errorf("grants[%d]: %w", i, err)
		}
		list[i] = auth.Grant{User: g.User, Group: g.Group, Catalog: g.Catalog, Dataset: g.Dataset, Role: role}
	}
	return auth.NewGrants(list)
}

// merged returns the catalog's S3 settings: its own keys over the top-level ones.
func (o *s3Config) merged(base s3Config) s3Config {
	if o == nil {
		return base
	}
	out := base
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&out.Endpoint, o.Endpoint}, {&out.Region, o.Region}, {&out.AccessKeyID, o.AccessKeyID},
		{&out.SecretAccessKey, o.SecretAccessKey}, {&out.SessionToken, o.SessionToken},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	if o.PathStyle != nil {
		out.PathStyle = o.PathStyle
	}
	if o.MaxAttempts != 0 {
		out.MaxAttempts = o.MaxAttempts
	}
	return out
}

// parseTableFlag splits a --table NAME=LOCATION value.
func parseTableFlag(v string) (name, location string, err error) {
	name, location, ok := strings.Cut(v, "=")
	name, location = strings.TrimSpace(name), strings.TrimSpace(location)
	if !ok || name == "" || location == "" {
		return "", "", fmt.Errorf("--table %q: want NAME=METADATA_LOCATION", v)
	}
	return name, location, nil
}
