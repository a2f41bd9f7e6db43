package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cachedb.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigFileAndFlagsMerge(t *testing.T) {
	path := writeConfig(t, `
listen: 127.0.0.1:4000
default_catalog: lake
s3:
  endpoint: http://file-endpoint:9000
  region: eu-west-1
  access_key_id: filekey
  secret_access_key: filesecret
catalogs:
  - name: lake
    type: sql
    uri: sqlite:////tmp/catalog.db
    warehouse: s3://warehouse/
    s3: {region: us-east-2}
`)
	opts := sourceOptions{configFile: path, tables: []string{"taxi=s3://b/taxi/metadata/v1.metadata.json"}, noWarehouse: true}
	opts.s3.Endpoint = "http://flag-endpoint:9000"
	cfg, err := opts.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:4000" || cfg.DefaultCatalog != "lake" || len(cfg.Catalogs) != 2 {
		t.Fatalf("config = %+v", cfg)
	}
	lake := cfg.Catalogs[0].S3.merged(cfg.S3)
	if lake.Endpoint != "http://flag-endpoint:9000" || lake.Region != "us-east-2" || lake.AccessKeyID != "filekey" {
		t.Errorf("lake's S3 settings = %+v", lake)
	}
	files := cfg.Catalogs[1]
	if files.Name != filesCatalog || files.Type != "files" || files.Tables["taxi"] != "s3://b/taxi/metadata/v1.metadata.json" {
		t.Errorf("--table catalog = %+v", files)
	}
	if s := lake.storage().String(); strings.Contains(s, "filesecret") {
		t.Errorf("storage settings print their secret: %s", s)
	}
}

func TestEmbeddedWarehouseIsTheDefaultWithoutCatalogs(t *testing.T) {
	cfg, err := sourceOptions{warehouse: "/tmp/wh"}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Catalogs) != 1 || cfg.Catalogs[0].Type != "embedded" || cfg.DefaultCatalog != localCatalog {
		t.Errorf("config = %+v", cfg)
	}
	cfg, err = sourceOptions{noWarehouse: true}.resolve()
	if err != nil || len(cfg.Catalogs) != 0 {
		t.Errorf("--no-warehouse: %+v %v", cfg, err)
	}
	cfg, err = sourceOptions{tables: []string{"a=/x/metadata.json"}}.resolve()
	if err != nil || len(cfg.Catalogs) != 1 || cfg.DefaultCatalog != filesCatalog {
		t.Errorf("--table alone: %+v %v", cfg, err)
	}
}

func TestBadConfigurationsAreExplained(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"catalogs:\n  - name: a\n    type: hive\n", `type "hive" is not one of`},
		{"catalogs:\n  - type: sql\n    uri: x\n", "name is required"},
		{"catalogs:\n  - {name: a, type: sql, uri: x}\n  - {name: A, type: rest, uri: y}\n", "used twice"},
		{"catalogs:\n  - {name: a, type: rest}\n", "needs a uri"},
		{"catalogs:\n  - {name: a, type: files}\n", "needs tables"},
		{"default_catalog: b\ncatalogs:\n  - {name: a, type: sql, uri: x}\n", `default_catalog "b"`},
		{"catalogz: []\n", "catalogz"},
		{"s3: {secret_acces_key: oops}\n", "secret_acces_key"},
		{"grants:\n  - {user: a, role: reader}\n", "grants[0]: give exactly one of catalog and dataset"},
		{"grants:\n  - {user: a, group: g, dataset: d, role: reader}\n", "give exactly one of user and group"},
		{"grants:\n  - {user: a, dataset: d, role: root}\n", `grants[0]: unknown role "root"`},
		{"grants:\n  - {user: a, dataset: 'team_*_x', role: admin}\n", "* may only end the name"},
		{"grants:\n  - {user: a, datasets: d, role: admin}\n", "datasets"},
	} {
		_, err := loadConfigFile(writeConfig(t, c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: want an error containing %q, got %v", c.yaml, c.want, err)
		}
	}
	if _, err := loadConfigFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
	if _, err := (sourceOptions{tables: []string{"no-location"}}).resolve(); err == nil {
		t.Error("--table without = was accepted")
	}
	if _, err := (sourceOptions{s3PathStyle: "maybe", noWarehouse: true}).resolve(); err == nil {
		t.Error("--s3-path-style maybe was accepted")
	}
}
