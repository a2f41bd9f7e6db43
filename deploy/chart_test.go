package deploy

import (
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	trainerv1alpha1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"
)

// valueSets are the configurations the chart is linted, rendered and checked with.
var valueSets = map[string]string{
	"minimal": `
clusterSecret: {value: not-a-real-secret}
`,
	"production": `
dataNodes: 5
image: {repository: registry.example.com/cachedb, tag: v1.2.3}
imagePullSecrets: [{name: regcred}]
clusterSecret: {existingSecret: cachedb-cluster, key: secret}
s3: {existingSecret: s3-credentials}
serviceAccount: {awsRoleArn: "arn:aws:iam::123456789012:role/cachedb", annotations: {team: ml}}
config:
  default_catalog: lake
  s3: {region: eu-west-1}
  catalogs:
    - {name: lake, type: rest, uri: "http://iceberg-rest:8181", warehouse: "s3://bucket/warehouse"}
logLevel: debug
pprof: true
extraEnv: [{name: CACHEDB_STATEMENT_TIMEOUT, value: 10m}, {name: CACHEDB_TLS_CERT, value: /etc/cachedb-tls/tls.crt}, {name: CACHEDB_TLS_KEY, value: /etc/cachedb-tls/tls.key}]
extraVolumes: [{name: tls, secret: {secretName: cachedb-tls}}]
extraVolumeMounts: [{name: tls, mountPath: /etc/cachedb-tls, readOnly: true}]
head:
  extraArgs: [--lost-after=2m, --users=/etc/cachedb-tls/users.yaml]
  nodeSelector: {pool: cpu}
  tolerations: [{key: dedicated, operator: Equal, value: cachedb, effect: NoSchedule}]
dataNode:
  extraArgs: [--max-message-bytes=134217728]
  resources: {requests: {cpu: "8", memory: 64Gi}, limits: {memory: 64Gi}}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app.kubernetes.io/component: data-node}}
serviceMonitor: {enabled: true, labels: {release: prometheus}}
grafanaDashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: ML}}
trainingRuntime:
  enabled: true
  numNodes: 2
  dataset: {name: lisbon, sql: "CREATE TABLE IF NOT EXISTS lisbon AS SELECT * FROM lake.rides WHERE city = 'Lisbon'"}
`,
	"tls-cert-manager": `
clusterSecret: {value: not-a-real-secret}
tls:
  enabled: true
  mutual: true
  certManager: {issuerRef: {name: cachedb-ca, kind: ClusterIssuer}, dnsNames: [cachedb.example.com]}
trainingRuntime: {enabled: true}
`,
	"tls-existing-secret": `
clusterSecret: {value: not-a-real-secret}
tls: {enabled: true, existingSecret: cachedb-tls-by-hand, caFromSecret: false}
trainingRuntime: {enabled: true}
`,
	"no-extras": `
fullnameOverride: cache
dataNodes: 1
clusterSecret: {existingSecret: s}
serviceAccount: {create: false, name: shared}
podDisruptionBudget: {enabled: false}
`,
}

func parseValues(t *testing.T, text string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestChartLints(t *testing.T) {
	for name, text := range valueSets {
		if err := lint(parseValues(t, text)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// rendered is one configuration's objects by kind and name.
type rendered map[string]any

func renderSet(t *testing.T, text string) rendered {
	t.Helper()
	out := rendered{}
	for _, d := range renderObjects(t, parseValues(t, text)) {
		key := d.kind + "/" + d.name
		if _, dup := out[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		out[key] = d.value
	}
	return out
}

func get[T any](t *testing.T, r rendered, key string) T {
	t.Helper()
	v, ok := r[key].(T)
	if !ok {
		t.Fatalf("%s not rendered (have %v)", key, slices.Sorted(maps.Keys(r)))
	}
	return v
}

// Every configuration renders objects that decode strictly against their API types, and hang
// together: Services and budgets select the pods they mean, probes hit the HTTP port, the pods
// run as the image expects.
func TestChartRendersConsistentObjects(t *testing.T) {
	for name, text := range valueSets {
		t.Run(name, func(t *testing.T) {
			vals := parseValues(t, text)
			r := renderSet(t, text)
			fullname := "cachedb"
			if v, ok := vals["fullnameOverride"].(string); ok {
				fullname = v
			}
			lws := get[*lwsv1.LeaderWorkerSet](t, r, "LeaderWorkerSet/"+fullname)
			dataNodes := 2
			if v, ok := vals["dataNodes"].(float64); ok {
				dataNodes = int(v)
			}
			tmpl := lws.Spec.LeaderWorkerTemplate
			if got := int(*tmpl.Size); got != dataNodes+1 {
				t.Errorf("group size %d, want %d data nodes + the head", got, dataNodes)
			}
			if lws.Spec.NetworkConfig == nil || *lws.Spec.NetworkConfig.SubdomainPolicy != lwsv1.SubdomainShared {
				t.Error("the data nodes' advertised DNS names need the shared subdomain")
			}
			leader, worker := *tmpl.LeaderTemplate, tmpl.WorkerTemplate
			for role, pod := range map[string]corev1.PodTemplateSpec{"head": leader, "data node": worker} {
				checkPod(t, role, pod.Spec, r)
			}
			head := leader.Spec.Containers[0]
			if head.Args[0] != "head" {
				t.Errorf("head args %v", head.Args)
			}
			node := worker.Spec.Containers[0]
			if node.Args[0] != "worker" || !slices.Contains(node.Args, "--head=$(LWS_LEADER_ADDRESS):50051") ||
				!slices.Contains(node.Args, "--advertise=$(POD_NAME)."+fullname+".$(POD_NAMESPACE):50051") {
				t.Errorf("data node args %v: want worker, the head at LWS_LEADER_ADDRESS and a DNS name under the LeaderWorkerSet's subdomain", node.Args)
			}
			checkFlags(t, "head", head)
			checkFlags(t, "worker", node)

			// The head's Service selects the head only; the metrics Service and the budget
			// select every pod.
			svc := get[*corev1.Service](t, r, "Service/"+fullname+"-head")
			if sel := labels.SelectorFromSet(svc.Spec.Selector); !sel.Matches(labels.Set(leader.Labels)) || sel.Matches(labels.Set(worker.Labels)) {
				t.Errorf("head Service selector %v: want the head's pods only", svc.Spec.Selector)
			}
			metricsSvc := get[*corev1.Service](t, r, "Service/"+fullname+"-metrics")
			if sel := labels.SelectorFromSet(metricsSvc.Spec.Selector); !sel.Matches(labels.Set(leader.Labels)) || !sel.Matches(labels.Set(worker.Labels)) {
				t.Errorf("metrics Service selector %v: want every pod", metricsSvc.Spec.Selector)
			}
			if name == "no-extras" {
				if _, ok := r["PodDisruptionBudget/"+fullname]; ok {
					t.Error("podDisruptionBudget.enabled=false rendered one")
				}
				if _, ok := r["ServiceAccount/shared"]; ok {
					t.Error("serviceAccount.create=false rendered one")
				}
				if leader.Spec.ServiceAccountName != "shared" {
					t.Errorf("pods use service account %q, want shared", leader.Spec.ServiceAccountName)
				}
				return
			}
			pdb := get[*policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget/"+fullname)
			if sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels); !sel.Matches(labels.Set(leader.Labels)) || !sel.Matches(labels.Set(worker.Labels)) {
				t.Errorf("budget selector %v: want every pod", pdb.Spec.Selector.MatchLabels)
			}
			if name != "production" {
				return
			}
			sa := get[*corev1.ServiceAccount](t, r, "ServiceAccount/"+fullname)
			if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::123456789012:role/cachedb" || sa.Annotations["team"] != "ml" {
				t.Errorf("service account annotations %v: want the IRSA role and the given ones", sa.Annotations)
			}
			cm := get[*corev1.ConfigMap](t, r, "ConfigMap/"+fullname)
			var cfg map[string]any
			if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &cfg); err != nil || cfg["default_catalog"] != "lake" {
				t.Errorf("config.yaml %q: %v", cm.Data["config.yaml"], err)
			}
			env := envOf(node)
			if env["CACHEDB_CONFIG"] != "/etc/cachedb/config.yaml" || env["CACHEDB_PPROF"] != "true" || env["CACHEDB_STATEMENT_TIMEOUT"] != "10m" {
				t.Errorf("data node env %v", env)
			}
			if ref := secretRef(node, "CACHEDB_S3_SECRET_ACCESS_KEY"); ref != "s3-credentials/secret-access-key" {
				t.Errorf("S3 secret key from %q", ref)
			}
			if ref := secretRef(node, "CACHEDB_CLUSTER_SECRET"); ref != "cachedb-cluster/secret" {
				t.Errorf("cluster secret from %q", ref)
			}
			sm := get[*monitoringv1.ServiceMonitor](t, r, "ServiceMonitor/"+fullname)
			if sel := labels.SelectorFromSet(sm.Spec.Selector.MatchLabels); !sel.Matches(labels.Set(metricsSvc.Labels)) || sel.Matches(labels.Set(svc.Labels)) {
				t.Errorf("ServiceMonitor selects %v: want the metrics Service only", sm.Spec.Selector.MatchLabels)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
			}
			checkRuntime(t, get[*trainerv1alpha1.ClusterTrainingRuntime](t, r, "ClusterTrainingRuntime/torch-distributed-with-cachedb"))
		})
	}
}

// checkPod checks what the image and the probes need of a cachedb pod.
func checkPod(t *testing.T, role string, spec corev1.PodSpec, r rendered) {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", role, len(spec.Containers))
	}
	c := spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["flight"] != 50051 || ports["http"] != 8080 {
		t.Errorf("%s ports %v", role, ports)
	}
	env := envOf(c)
	if env["CACHEDB_LISTEN"] != ":50051" || env["CACHEDB_HTTP_LISTEN"] != ":8080" {
		t.Errorf("%s listens on %q and %q", role, env["CACHEDB_LISTEN"], env["CACHEDB_HTTP_LISTEN"])
	}
	for probe, path := range map[*corev1.Probe]string{c.ReadinessProbe: "/ready", c.LivenessProbe: "/live"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s: want an HTTP probe of %s on the http port, have %+v", role, path, probe)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s security context %+v: want a read-only root filesystem", role, sc)
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 {
		t.Errorf("%s pod security context %+v: want the image's non-root user", role, psc)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if mounts["tmp"] != "/tmp" || volumes["tmp"].EmptyDir == nil {
		t.Errorf("%s: /tmp is not an emptyDir (mounts %v)", role, mounts)
	}
	for name := range mounts {
		if _, ok := volumes[name]; !ok {
			t.Errorf("%s mounts volume %s, which the pod lacks", role, name)
		}
	}
	if cm := volumes["config"].ConfigMap; cm != nil {
		if _, ok := r["ConfigMap/"+cm.Name]; !ok {
			t.Errorf("%s mounts ConfigMap %s, which is not rendered", role, cm.Name)
		}
	}
	if sa := spec.ServiceAccountName; sa != "shared" {
		if _, ok := r["ServiceAccount/"+sa]; !ok {
			t.Errorf("%s runs as service account %s, which is not rendered", role, sa)
		}
	}
	if name := strings.Split(secretRef(c, "CACHEDB_CLUSTER_SECRET"), "/")[0]; name == "" {
		t.Errorf("%s has no cluster secret from a Secret", role)
	} else if _, made := r["Secret/"+name]; !made && name == "cachedb-cluster-secret" {
		t.Errorf("%s reads the cluster secret from %s, which is not rendered", role, name)
	}
}

// checkRuntime checks the ClusterTrainingRuntime: the dataset step runs cachedb against the
// head, and the training step waits for it and is told where to read.
func checkRuntime(t *testing.T, rt *trainerv1alpha1.ClusterTrainingRuntime) {
	t.Helper()
	if rt.Spec.MLPolicy == nil || rt.Spec.MLPolicy.Torch == nil || *rt.Spec.MLPolicy.NumNodes != 2 {
		t.Errorf("mlPolicy %+v", rt.Spec.MLPolicy)
	}
	jobs := rt.Spec.Template.Spec.ReplicatedJobs
	if len(jobs) != 2 || jobs[0].Name != "dataset-initializer" || jobs[1].Name != "node" {
		t.Fatalf("replicated jobs %v: want dataset-initializer, then node", jobs)
	}
	init := jobs[0].Template.Spec.Template.Spec.Containers[0]
	if init.Image != "registry.example.com/cachedb:v1.2.3" || init.Args[0] != "sql" || !slices.Contains(init.Args, "cachedb-head.ml.svc:50051") {
		t.Errorf("dataset-initializer %s %v: want cachedb sql against the head", init.Image, init.Args)
	}
	if d := jobs[1].DependsOn; len(d) != 1 || d[0].Name != "dataset-initializer" || d[0].Status != "Complete" {
		t.Errorf("node depends on %+v, want the dataset-initializer complete", d)
	}
	env := envOf(jobs[1].Template.Spec.Template.Spec.Containers[0])
	if env["CACHEDB_ADDRESS"] != "grpc://cachedb-head.ml.svc:50051" || env["CACHEDB_DATASET"] != "lisbon" {
		t.Errorf("training env %v", env)
	}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func secretRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

// cachedbHelp caches `cachedb COMMAND --help` of the cachedb built from this checkout.
var cachedbHelp = map[string]string{}

// checkFlags checks that every flag the container passes (--x=... arguments and CACHEDB_X
// variables) is one `cachedb <command>` has: a misspelt one would stop the pod at start.
func checkFlags(t *testing.T, command string, c corev1.Container) {
	t.Helper()
	help, ok := cachedbHelp[command]
	if !ok {
		out, err := exec.Command(staticBinary(t), command, "--help").Output()
		if err != nil {
			t.Fatal(err)
		}
		help = string(out)
		cachedbHelp[command] = help
	}
	flag := regexp.MustCompile(`^--([a-z0-9-]+)`)
	var names []string
	for _, a := range c.Args {
		if m := flag.FindStringSubmatch(a); m != nil {
			names = append(names, m[1])
		}
	}
	for _, e := range c.Env {
		if n, ok := strings.CutPrefix(e.Name, "CACHEDB_"); ok {
			names = append(names, strings.ReplaceAll(strings.ToLower(n), "_", "-"))
		}
	}
	for _, n := range names {
		if !strings.Contains(help, "--"+n+" ") {
			t.Errorf("cachedb %s has no flag --%s", command, n)
		}
	}
}

// Without a cluster secret the chart refuses to render, saying what to set.
func TestChartNeedsClusterSecret(t *testing.T) {
	_, err := render("cachedb", "ml", parseValues(t, "dataNodes: 1"))
	if err == nil || !strings.Contains(err.Error(), "clusterSecret") {
		t.Errorf("rendering without a cluster secret: %v, want an error naming clusterSecret", err)
	}
}
