package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog/iceberg/demo"
)

// TestKubeflowDropInWithAServiceToken: the cache's pods given a service token from a mounted
// Secret (CACHEDB_SERVICE_TOKEN_FILE) and a cluster secret besides Kubeflow's environment. The
// workers still become ready (they prove themselves to the head with the cluster secret); a
// DataCacheDataset whose calls carry the token reads every row once, and one without it, or
// with another, is refused UNAUTHENTICATED. Without a cluster secret such a head does not
// start: the key it would derive from the pods' environment would sign tokens anyone can make.
func TestKubeflowDropInWithAServiceToken(t *testing.T) {
	wh, err := demo.Ensure(context.Background(), warehouseDir)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := filepath.Glob(filepath.Join(strings.TrimPrefix(wh.Warehouse, "file://"), "demo.db", "rides", "metadata", "*.metadata.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no metadata.json of demo.rides in %s: %v", wh.Warehouse, err)
	}
	slices.Sort(metas)
	const token = "kubeflow-cache-token-0123456789abcdef0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	common := []string{"METADATA_LOC=" + metas[len(metas)-1], "SCHEMA_NAME=demo", "TABLE_NAME=rides",
		"LWS_LEADER_ADDRESS=127.0.0.1", "LWS_GROUP_SIZE=2", "CACHEDB_SERVICE_TOKEN_FILE=" + tokenFile}

	// No cluster secret: refused at start, naming what is missing.
	link := filepath.Join(t.TempDir(), "head")
	if err := os.Symlink(binary, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "127.0.0.1", port)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, append(slices.Clone(common), "LWS_WORKER_INDEX=0", "HEALTH_PORT="+freePort(t))...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "need a cluster secret") || strings.Contains(string(out), token) {
		t.Fatalf("a Kubeflow head with a service token and no cluster secret: %v\n%s", err, out)
	}

	common = append(common, "CACHEDB_CLUSTER_SECRET=kubeflow test cluster secret")
	health := []string{freePort(t), freePort(t)}
	pod := func(i int) []string {
		return append(slices.Clone(common), fmt.Sprintf("LWS_WORKER_INDEX=%d", i), "HEALTH_PORT="+health[i])
	}
	headLog := startPod(t, "head", pod(0), "127.0.0.1", port)
	workerLog := startPod(t, "worker", pod(1), "127.0.0.2", port)
	awaitReadiness(t, health[0], http.StatusOK, headLog)
	awaitReadiness(t, health[1], http.StatusOK, workerLog)
	if !strings.Contains(headLog(), `logins="a service token"`) {
		t.Errorf("the head's log does not say it requires the service token:\n%s", headLog())
	}
	head := net.JoinHostPort("127.0.0.1", port)

	all, info, err := readShardWithToken(head, 0, 1, token)
	if err != nil || len(all) == 0 || info.TotalRecords != int64(len(all)) {
		t.Fatalf("the whole dataset with the token: %d rows (total_records %v), %v", len(all), info, err)
	}
	seen := map[int64]bool{}
	for k := range 3 {
		ids, _, err := readShardWithToken(head, k, 3, token)
		if err != nil {
			t.Fatalf("shard %d/3: %v", k, err)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("shard %d/3: row %d again", k, id)
			}
			seen[id] = true
		}
	}
	if len(seen) != len(all) {
		t.Errorf("3 shards hold %d rows, the dataset %d", len(seen), len(all))
	}
	for name, tok := range map[string]string{"no token": "", "another token": strings.ToUpper(token)} {
		_, _, err := readShardWithToken(head, 0, 1, tok)
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: %v, want UNAUTHENTICATED", name, err)
		}
	}
	if strings.Contains(headLog()+workerLog(), token) {
		t.Error("a log holds the service token")
	}
}
