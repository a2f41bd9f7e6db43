package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	"github.com/cachedb/cachedb/catalog/iceberg/storage"
)

const (
	// filesCatalog is where --table puts bare metadata.json tables.
	filesCatalog = "files"
	// localCatalog is the embedded warehouse's catalog name.
	localCatalog = "local"
)

// sourceOptions are the serve flags that describe source catalogs; they override the file.
type sourceOptions struct {
	configFile     string
	tables         []string
	defaultCatalog string
	warehouse      string
	noWarehouse    bool
	s3             s3Config
	s3PathStyle    string // "", "true" or "false": a flag cannot be a *bool
	// s3Secret and s3Token give s3's SecretAccessKey and SessionToken.
	s3Secret, s3Token secretValue
}

// register adds the flags that describe source catalogs and storage.
func (o *sourceOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.configFile, "config", "", "YAML file describing catalogs and storage (docs/catalogs.md)")
	f.StringSliceVar(&o.tables, "table", nil, "NAME=METADATA_LOCATION: serve a bare Iceberg metadata.json as table NAME of catalog "+filesCatalog+" (repeatable)")
	f.StringVar(&o.defaultCatalog, "default-catalog", "", "catalog that unqualified and namespace-qualified names fall back to")
	f.StringVar(&o.warehouse, "warehouse", "", "directory of the embedded Iceberg warehouse (default "+defaultWarehouseDir()+")")
	f.BoolVar(&o.noWarehouse, "no-warehouse", false, "do not create or serve the embedded warehouse")
	f.StringVar(&o.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL for S3-compatible stores such as MinIO (implies path-style)")
	f.StringVar(&o.s3.Region, "s3-region", "", "S3 region")
	f.StringVar(&o.s3.AccessKeyID, "s3-access-key-id", "", "S3 access key id (default: the AWS credential chain)")
	registerSecret(f, &o.s3Secret, "s3-secret-access-key", "the S3 secret access key")
	registerSecret(f, &o.s3Token, "s3-session-token", "the S3 session token")
	f.StringVar(&o.s3PathStyle, "s3-path-style", "", "true or false: force path-style or virtual-hosted addressing")
	f.IntVar(&o.s3.MaxAttempts, "s3-max-attempts", 0, "attempts per S3 request, retries with backoff included (default 5)")
}

// defaultWarehouseDir is where the embedded warehouse lives unless --warehouse says otherwise.
func defaultWarehouseDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "cachedb", "warehouse")
}

// resolveSources merges the configuration file with the flags. With neither catalogs nor
// --table, the embedded warehouse is served (unless --no-warehouse).
func (o sourceOptions) resolve() (serverConfig, error) {
	var cfg serverConfig
	if o.configFile != "" {
		var err error
		if cfg, err = loadConfigFile(o.configFile); err != nil {
			return cfg, err
		}
	}
	var err error
	if o.s3.SecretAccessKey, err = o.s3Secret.get(); err != nil {
		return cfg, err
	}
	if o.s3.SessionToken, err = o.s3Token.get(); err != nil {
		return cfg, err
	}
	cfg.S3 = o.s3.overrides(cfg.S3)
	switch o.s3PathStyle {
	case "":
	case "true", "false":
		v := o.s3PathStyle == "true"
		cfg.S3.PathStyle = &v
	default:
		return cfg, fmt.Errorf("--s3-path-style %q: want true or false", o.s3PathStyle)
	}
	if len(o.tables) > 0 {
		files := catalogConfig{Name: filesCatalog, Type: "files", Tables: map[string]string{}}
		for _, v := range o.tables {
			name, loc, err := parseTableFlag(v)
			if err != nil {
				return cfg, err
			}
			files.Tables[name] = loc
		}
		cfg.Catalogs = append(cfg.Catalogs, files)
	}
	if o.defaultCatalog != "" {
		cfg.DefaultCatalog = o.defaultCatalog
	}
	if (len(cfg.Catalogs) == 0 && !o.noWarehouse) || o.warehouse != "" {
		cfg.Catalogs = append(cfg.Catalogs, catalogConfig{Name: localCatalog, Type: "embedded", URI: o.warehouse})
	}
	if cfg.DefaultCatalog == "" && len(cfg.Catalogs) == 1 {
		cfg.DefaultCatalog = cfg.Catalogs[0].Name
	}
	return cfg, cfg.validate()
}

// openSources opens every configured catalog, sharing columns (nil: none) as their column
// cache. Opening does not contact remote catalogs, so a catalog that is down fails its queries,
// not the server.
func openSources(ctx context.Context, cfg serverConfig, columns *iceberg.ColumnCache) ([]catalog.Catalog, error) {
	var out []catalog.Catalog
	for _, cc := range cfg.Catalogs {
		icfg := iceberg.Config{
			Name:             cc.Name,
			Type:             cc.Type,
			URI:              cc.URI,
			Warehouse:        cc.Warehouse,
			DefaultNamespace: cc.DefaultNamespace,
			SplitBytes:       cc.SplitBytes,
			Tables:           cc.Tables,
			LocationPrefixes: cc.LocationPrefixes,
			Properties:       cc.Properties,
			Storage:          cc.S3.merged(cfg.S3).storage(),
		}
		if cc.Type == "embedded" {
			dir := cc.URI
			if dir == "" {
				dir = defaultWarehouseDir()
			}
			wh, err := demo.Ensure(ctx, dir)
			if err != nil {
				return nil, fmt.Errorf("creating the embedded warehouse in %s: %w", dir, err)
			}
			slog.Info("serving the embedded Iceberg warehouse", "dir", dir, "catalog", cc.Name, "tables", wh.Tables)
			storage := icfg.Storage
			icfg = wh.CatalogConfig(cc.Name)
			icfg.Storage = storage
		}
		icfg.ColumnCache = columns
		c, err := iceberg.Open(ctx, icfg)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", cc.Name, err)
		}
		slog.Info("catalog configured", "catalog", cc.Name, "type", icfg.Type, "storage", icfg.Storage.String())
		out = append(out, c)
	}
	return out, nil
}

// storage converts the YAML settings.
func (c s3Config) storage() storage.Config {
	return storage.Config{
		Endpoint:        c.Endpoint,
		Region:          c.Region,
		AccessKeyID:     c.AccessKeyID,
		SecretAccessKey: c.SecretAccessKey,
		SessionToken:    c.SessionToken,
		PathStyle:       c.PathStyle,
		MaxAttempts:     c.MaxAttempts,
	}
}

// overrides returns base with every non-empty field of c (the flags) written over it.
func (c s3Config) overrides(base s3Config) s3Config { return (&c).merged(base) }
