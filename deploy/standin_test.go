package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	trainerv1alpha1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// standinValues are the chart values the stand-in renders: three data nodes, a cluster secret
// the chart makes a Secret of, mutual TLS with certificates from cert-manager (which the
// stand-in issues, certissuer_test.go), and a configuration (a ConfigMap) whose one catalog is the
// embedded demo warehouse in warehouse, a directory every pod reaches, as every pod of a
// cluster reaches its object store. (Without a configuration each pod would generate a demo
// warehouse of its own in its own /tmp, whose snapshots the others cannot read.)
// CHART_STANDIN_VALUES names a YAML file of values to use instead.
func standinValues(t *testing.T, warehouse string) map[string]any {
	t.Helper()
	if path := os.Getenv("CHART_STANDIN_VALUES"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return parseValues(t, string(data))
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"dataNodes":     3,
		"clusterSecret": map[string]any{"value": hex.EncodeToString(secret)},
		"logFormat":     "text",
		"tls": map[string]any{
			"enabled": true, "mutual": true,
			"certManager": map[string]any{"issuerRef": map[string]any{"name": "standin-ca", "kind": "ClusterIssuer"}},
		},
		"config": map[string]any{
			"default_catalog": "local",
			"catalogs":        []any{map[string]any{"name": "local", "type": "embedded", "uri": warehouse}},
		},
		// Its dataset-initializer step is run against the group.
		"trainingRuntime": map[string]any{
			"enabled": true,
			"dataset": map[string]any{"name": "standin_rides", "sql": "CREATE TABLE IF NOT EXISTS standin_rides AS SELECT * FROM demo.rides"},
		},
	}
}

// TestChartStandin starts the chart's LeaderWorkerSet group on loopback (loopback_test.go): the
// head pod, once its readiness probe passes (startupPolicy LeaderReady), then the data-node
// pods, each until its own probes pass; runs queries through the head that the data nodes
// serve their shares of; checks the processes' /metrics; and stops them with SIGTERM, which
// they must survive cleanly within their grace period.
func TestChartStandin(t *testing.T) {
	bin := staticBinary(t)
	dir := t.TempDir()
	values := standinValues(t, filepath.Join(dir, "shared-warehouse"))
	const namespace = "ml"
	objs := renderObjects(t, values)
	if t.Failed() {
		t.FailNow()
	}
	lws := "cachedb"
	if v, ok := values["fullnameOverride"].(string); ok {
		lws = v
	}
	c, err := newLoopbackCluster(objs, namespace, lws, bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range c.pods {
			if p.exit != nil {
				_ = p.cmd.Process.Kill()
				<-p.exit
				p.exit = nil
			}
		}
	})
	head, nodes := c.pods[0], c.pods[1:]
	for _, p := range c.pods {
		t.Logf("pod %s: %s", p.pod.Name, strings.Join(p.argv, " "))
		// Secrets come through the environment or files, never on a command line (ps shows it).
		for name, data := range c.secrets {
			for key, value := range data {
				for _, a := range p.argv {
					if strings.Contains(a, value) {
						t.Errorf("pod %s passes Secret %s's %s on its command line", p.pod.Name, name, key)
					}
				}
			}
		}
	}

	// LeaderReady: the workers are created once the leader is ready.
	deadline := time.Now().Add(3 * time.Minute)
	if err := c.start(head); err != nil {
		t.Fatal(err)
	}
	if err := c.awaitReady(head, deadline); err != nil {
		t.Fatal(err)
	}
	for _, p := range nodes {
		if err := c.start(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range nodes {
		if err := c.awaitReady(p, deadline); err != nil {
			t.Fatal(err)
		}
	}

	flight, err := head.port(intstr.FromString("flight"))
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(flight)
	tlsArgs, scheme, err := clientTLSArgs(objs, c, dir)
	if err != nil {
		t.Fatal(err)
	}
	sql := func(query string) string {
		t.Helper()
		out, err := exec.Command(bin, append(append([]string{"sql", "--connect", addr}, tlsArgs...), "-e", query)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", query, err, out)
		}
		return string(out)
	}
	if tlsArgs != nil {
		// Every pod serves the certificate issued for it, and a client without TLS, or without
		// a client certificate where TLS is mutual, is refused.
		for _, p := range c.pods {
			if log, _ := os.ReadFile(p.logFile()); !strings.Contains(string(log), "transport=tls") && !strings.Contains(string(log), `transport="mutual tls"`) {
				t.Errorf("pod %s does not serve TLS:\n%s", p.pod.Name, tail(p.logFile()))
			}
		}
		if out, err := exec.Command(bin, "sql", "--connect", addr, "-e", "SELECT 1").CombinedOutput(); err == nil {
			t.Errorf("a plaintext client was answered:\n%s", out)
		}
		headLog, _ := os.ReadFile(head.logFile())
		if out, err := exec.Command(bin, "sql", "--connect", addr, tlsArgs[0], "-e", "SELECT 1").CombinedOutput(); err == nil && strings.Contains(string(headLog), `transport="mutual tls"`) {
			t.Errorf("a client without a certificate was answered by a mutual TLS head:\n%s", out)
		}
	}

	// Every data node registered under its pod's name (--id=$(POD_NAME)), at the address it
	// advertises (its pod's DNS name, here rewritten to its loopback port), and alive.
	members := sql("SELECT id, address, state FROM system.nodes ORDER BY id")
	for _, p := range nodes {
		port, err := p.port(intstr.FromString("flight"))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("| %s | 127.0.0.1:%d | alive |", p.pod.Name, port)
		if !strings.Contains(strings.Join(strings.Fields(members), " "), want) {
			t.Errorf("system.nodes lacks %q:\n%s", want, members)
		}
	}

	// A query divided over the data nodes, one grouped on them (a shuffle between them), and a
	// dataset materialized on them.
	if out := sql("SELECT ride_id, city FROM demo.rides WHERE ride_id <= 40"); !strings.Contains(out, "40 rows in set") {
		t.Errorf("want 40 rows:\n%s", out)
	}
	if out := sql("SELECT city, count(*) FROM demo.rides GROUP BY city"); !strings.Contains(out, "8 rows in set") {
		t.Errorf("want 8 cities:\n%s", out)
	}
	// The training runtime's dataset-initializer step materializes its dataset through the
	// head's Service (RELEASE-head.NAMESPACE.svc); the trainer step is told the same address.
	dataset := "standin_rides"
	if rt := runtimeOf(objs); rt != nil {
		jobs := rt.Spec.Template.Spec.ReplicatedJobs
		for _, job := range jobs {
			tmpl := job.Template.Spec.Template
			switch job.Name {
			case "dataset-initializer":
				init, err := c.jobPod(rt.Name+"-dataset-initializer-0", tmpl)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("pod %s: %s", init.pod.Name, strings.Join(init.argv, " "))
				if err := c.start(init); err != nil {
					t.Fatal(err)
				}
				if err := c.awaitExit(init, time.Now().Add(3*time.Minute)); err != nil {
					t.Fatal(err)
				}
			case "node":
				env := envOf(tmpl.Spec.Containers[0])
				dataset = env["CACHEDB_DATASET"]
				got, err := c.rewrite(&loopbackPod{}, nil, env["CACHEDB_ADDRESS"])
				if err != nil || got != scheme+addr {
					t.Errorf("the trainer step's CACHEDB_ADDRESS %q is %q (%v) on loopback, want the head's %s%s", env["CACHEDB_ADDRESS"], got, err, scheme, addr)
				}
			}
		}
	} else {
		sql("CREATE TABLE " + dataset + " AS SELECT * FROM demo.rides")
	}
	if out := sql("SELECT count(*) AS n FROM " + dataset); !strings.Contains(out, "| 200000 |") {
		t.Errorf("dataset %s does not hold demo.rides' 200000 rows:\n%s", dataset, out)
	}

	// The metrics say the data nodes served those shares, shuffled and hold the dataset.
	scrapes := map[string]exposition{}
	for _, p := range c.pods {
		port, err := p.port(intstr.FromString("http"))
		if err != nil {
			t.Fatal(err)
		}
		e, err := scrape(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			t.Fatalf("pod %s: %v", p.pod.Name, err)
		}
		scrapes[p.pod.Name] = e
	}
	var stages, shuffled float64
	for _, p := range nodes {
		stages += scrapes[p.pod.Name].sum("cachedb_statements_total", map[string]string{"kind": "stage", "outcome": "ok"})
		shuffled += scrapes[p.pod.Name].sum("cachedb_shuffle_fetched_bytes_total", nil)
	}
	if stages == 0 {
		t.Error("no data node counted a stage it served: the queries were not divided over them")
	}
	if shuffled == 0 {
		t.Error("no data node fetched shuffle bytes for the grouped query")
	}
	held := scrapes[head.pod.Name].labelValues("cachedb_dataset_bytes", "node")
	for _, p := range nodes {
		if held[p.pod.Name] <= 0 {
			t.Errorf("the head's cachedb_dataset_bytes says data node %s holds nothing of the dataset (%v)", p.pod.Name, held)
		}
	}
	if alive := scrapes[head.pod.Name].sum("cachedb_nodes", map[string]string{"state": "alive"}); int(alive) != len(nodes) {
		t.Errorf("the head's cachedb_nodes{state=alive} = %v, want %d", alive, len(nodes))
	}

	t.Run("dashboard", func(t *testing.T) { checkDashboardMetrics(t, scrapes) })

	// make chart-standin CHART_STANDIN_KEEP=1: leave the group running for a person to try.
	if os.Getenv("CHART_STANDIN_KEEP") != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		httpPort, _ := head.port(intstr.FromString("http"))
		t.Logf("the group runs: cachedb sql --connect %s; /metrics at http://127.0.0.1:%d/metrics; pods' logs under %s; Ctrl-C stops it", addr, httpPort, dir)
		<-ctx.Done()
	}

	if err := c.stop(); err != nil {
		t.Error(err)
	}
	// The root filesystem is read-only: nothing may have been written in the working directory
	// (tests may run as root, whom the directory's mode does not stop).
	for _, p := range c.pods {
		if entries, err := os.ReadDir(filepath.Join(p.dir, "root")); err != nil || len(entries) > 0 {
			t.Errorf("pod %s wrote in its working directory (the read-only root): %v %v", p.pod.Name, entries, err)
		}
	}
}

// clientTLSArgs are the `cachedb sql` flags that reach the stood-in group from outside it, and
// the scheme of its address: none and grpc:// without a Certificate; with one, its CA and (for
// mutual TLS) a client certificate issued for a Certificate of client usage (one without server
// usage preferred), written under dir, and grpc+tls://.
func clientTLSArgs(objs []decoded, c *loopbackCluster, dir string) ([]string, string, error) {
	var client *certificate
	for _, d := range objs {
		cert, ok := d.value.(*certificate)
		if !ok || !slices.Contains(cert.Spec.Usages, "client auth") {
			continue
		}
		if client == nil || !slices.Contains(cert.Spec.Usages, "server auth") {
			client = cert
		}
	}
	if client == nil {
		return nil, "grpc://", nil
	}
	data := c.secrets[client.Spec.SecretName]
	var args []string
	// --tls-ca first: alone it is a client without a certificate.
	for _, kf := range [][2]string{{"ca.crt", "--tls-ca"}, {"tls.crt", "--tls-cert"}, {"tls.key", "--tls-key"}} {
		key, flag := kf[0], kf[1]
		path := filepath.Join(dir, "client-"+key)
		if err := os.WriteFile(path, []byte(data[key]), 0o600); err != nil {
			return nil, "", err
		}
		args = append(args, flag+"="+path)
	}
	return args, "grpc+tls://", nil
}

// runtimeOf is the rendered ClusterTrainingRuntime, if any.
func runtimeOf(objs []decoded) *trainerv1alpha1.ClusterTrainingRuntime {
	for _, d := range objs {
		if rt, ok := d.value.(*trainerv1alpha1.ClusterTrainingRuntime); ok {
			return rt
		}
	}
	return nil
}
