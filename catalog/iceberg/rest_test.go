package iceberg

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/testutil/minio"
)

// restServer starts Apache Iceberg's own REST catalog server (the code behind the
// iceberg-rest-fixture image, installed by scripts/iceberg-rest.sh) with its warehouse in S3 at
// s3://lake/rest (the installed server's local-file IO lacks Hadoop's configuration classes), or
// skips the test when the server is not installed. It returns the base URL and the MinIO.
func restServer(t *testing.T) (string, *minio.Server) {
	t.Helper()
	if os.Getenv("CACHEDB_SKIP_ICEBERG_REST") != "" {
		t.Skip("CACHEDB_SKIP_ICEBERG_REST is set")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		unavailable(t, "java is not installed")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	lib := filepath.Join(cache, "cachedb", "iceberg-rest-1.11.0", "lib")
	if _, err := os.Stat(filepath.Join(filepath.Dir(lib), ".complete")); err != nil {
		unavailable(t, "the Iceberg REST catalog server is not installed (scripts/iceberg-rest.sh install)")
	}
	srv := minio.Start(t)
	srv.CreateBucket(t, "lake")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(java, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", lib+"/*", "org.apache.iceberg.rest.RESTCatalogServer")
	cmd.Env = append(os.Environ(),
		"CATALOG_REST_PORT="+strconv.Itoa(port),
		"CATALOG_WAREHOUSE=s3://lake/rest",
		"CATALOG_URI=jdbc:sqlite:"+filepath.Join(dir, "rest.db"),
		"CATALOG_JDBC_SCHEMA__VERSION=V1",
		"CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO",
		"CATALOG_S3_ENDPOINT="+srv.Endpoint,
		"CATALOG_S3_ACCESS__KEY__ID="+srv.AccessKey,
		"CATALOG_S3_SECRET__ACCESS__KEY="+srv.SecretKey,
		"CATALOG_S3_PATH__STYLE__ACCESS=true",
		"CATALOG_CLIENT_REGION="+minio.Region,
		"AWS_REGION="+minio.Region)
	logf, err := os.Create(filepath.Join(dir, "rest.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("REST catalog server log:\n%s", log)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	uri := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(uri + "/v1/config")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return uri, srv
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("the REST catalog server did not answer within 60s:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRESTCatalog(t *testing.T) {
	uri, srv := restServer(t)
	ctx := context.Background()
	st := storage.Config{Endpoint: srv.Endpoint, Region: minio.Region, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	storage.Register()

	// Write through iceberg-go's REST client, as any writer would.
	props := iceberg.Properties{"type": "rest", "uri": uri, "credential": "", "warehouse": ""}
	for k, v := range st.Properties() {
		props[k] = v
	}
	w, err := icecat.Load(ctx, "writer", props)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"ml", "raw"} {
		if err := w.CreateNamespace(ctx, []string{ns}, nil); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := w.CreateTable(ctx, []string{"ml", "Features"}, plainSchema())
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a","score":0.5}]`)
	first := tbl.CurrentSnapshot().SnapshotID
	appendJSON(t, tbl, `[{"id":2,"name":"b","score":1.5}]`)
	if _, err := w.CreateTable(ctx, []string{"raw", "events"}, plainSchema()); err != nil {
		t.Fatal(err)
	}

	c, err := Open(ctx, Config{Name: "rest", Type: TypeREST, URI: uri, DefaultNamespace: "ml", Storage: st})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names, err := c.TableNames(ctx)
	if err != nil || strings.Join(names, ",") != "ml.Features,raw.events" {
		t.Errorf("TableNames = %q, %v", names, err)
	}
	if nss, err := c.Namespaces(ctx); err != nil || strings.Join(nss, ",") != "ml,raw" {
		t.Errorf("Namespaces = %q, %v", nss, err)
	}
	got, err := c.Table(ctx, "features") // default namespace, case-insensitive
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t, got, catalog.ScanRequest{Filter: eq(0, scalar.NewInt64Scalar(2))})
	equalRows(t, res.rows, "2|b|1.5")
	if kept, total := ratio(t, explainValue(t, res.plan.Explain, "files")); kept != 1 || total != 2 {
		t.Errorf("explain %q: want files=1/2", res.plan.Explain)
	}
	old, err := c.Table(ctx, "ml.Features@"+strconv.FormatInt(first, 10))
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, scan(t, old, catalog.ScanRequest{}).rows, "1|a|0.5")
	if _, err := c.Table(ctx, "ml.nope"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("missing table: %v", err)
	}
}
