package deploy

import (
	"crypto/x509"
	"slices"
	"strings"
	"testing"

	trainerv1alpha1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// tlsMount is where the chart mounts the TLS Secret.
const tlsMount = "/etc/cachedb-tls"

// TestChartTLS: with tls.enabled every pod serves TLS with the Secret it mounts (cert-manager's
// Certificate, or a Secret given by name), whose certificate names every address the pods and
// clients dial; mutual TLS adds the client CA; the training runtime's pods trust the CA and,
// for mutual TLS, present a client certificate of their own.
func TestChartTLS(t *testing.T) {
	t.Run("cert-manager", func(t *testing.T) {
		r := renderSet(t, valueSets["tls-cert-manager"])
		cert := get[*certificate](t, r, "Certificate/cachedb-tls")
		if cert.Spec.SecretName != "cachedb-tls" || cert.Spec.IssuerRef.Name != "cachedb-ca" || cert.Spec.IssuerRef.Kind != "ClusterIssuer" {
			t.Errorf("certificate spec %+v", cert.Spec)
		}
		if !slices.Contains(cert.Spec.Usages, "server auth") || !slices.Contains(cert.Spec.Usages, "client auth") {
			t.Errorf("usages %v: the pods serve with it and present it to each other", cert.Spec.Usages)
		}
		// Every name the pods and clients dial: the head Service (as the runtime's steps and
		// clients write it), the head pod and the data nodes under the shared subdomain (what
		// LWS_LEADER_ADDRESS and --advertise hold), and the extra names.
		leaf := &x509.Certificate{DNSNames: cert.Spec.DNSNames}
		for _, host := range []string{"cachedb-head", "cachedb-head.ml.svc", "cachedb-head.ml.svc.cluster.local",
			"cachedb-0.cachedb.ml", "cachedb-0-2.cachedb.ml", "cachedb.example.com"} {
			if err := leaf.VerifyHostname(host); err != nil {
				t.Errorf("the certificate does not name %s: %v", host, err)
			}
		}
		lws := get[*lwsv1.LeaderWorkerSet](t, r, "LeaderWorkerSet/cachedb")
		for role, pod := range map[string]corev1.PodSpec{"head": lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec, "data node": lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec} {
			checkTLSPod(t, role, pod, "cachedb-tls", true, true)
		}
		client := get[*certificate](t, r, "Certificate/cachedb-client-tls")
		if u := client.Spec.Usages; !slices.Contains(u, "client auth") || slices.Contains(u, "server auth") {
			t.Errorf("the runtime's client certificate has usages %v: want client auth only", u)
		}
		checkTLSRuntime(t, get[*trainerv1alpha1.ClusterTrainingRuntime](t, r, "ClusterTrainingRuntime/torch-distributed-with-cachedb"), "cachedb-client-tls", true)
	})
	t.Run("existing Secret, public CA", func(t *testing.T) {
		r := renderSet(t, valueSets["tls-existing-secret"])
		for key := range r {
			if strings.HasPrefix(key, "Certificate/") {
				t.Errorf("%s rendered beside an existing Secret", key)
			}
		}
		lws := get[*lwsv1.LeaderWorkerSet](t, r, "LeaderWorkerSet/cachedb")
		checkTLSPod(t, "head", lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec, "cachedb-tls-by-hand", false, false)
		checkTLSRuntime(t, get[*trainerv1alpha1.ClusterTrainingRuntime](t, r, "ClusterTrainingRuntime/torch-distributed-with-cachedb"), "cachedb-tls-by-hand", false)
	})
	for name, values := range map[string]string{
		"no Secret and no issuer":             "clusterSecret: {value: x}\ntls: {enabled: true}",
		"mutual runtime without a client one": "clusterSecret: {value: x}\ntls: {enabled: true, mutual: true, existingSecret: s}\ntrainingRuntime: {enabled: true}",
	} {
		if _, err := render("cachedb", "ml", parseValues(t, values)); err == nil || !strings.Contains(err.Error(), "tls.") {
			t.Errorf("%s: %v, want an error naming what to set under tls", name, err)
		}
	}
}

// checkTLSPod checks that a cachedb pod serves TLS with Secret secret mounted at tlsMount.
func checkTLSPod(t *testing.T, role string, spec corev1.PodSpec, secret string, ca, mutual bool) {
	t.Helper()
	c := spec.Containers[0]
	env := envOf(c)
	want := map[string]string{"CACHEDB_TLS_CERT": tlsMount + "/tls.crt", "CACHEDB_TLS_KEY": tlsMount + "/tls.key"}
	if ca {
		want["CACHEDB_TLS_CA"] = tlsMount + "/ca.crt"
	}
	if mutual {
		want["CACHEDB_TLS_CLIENT_CA"] = tlsMount + "/ca.crt"
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: %s=%q, want %q", role, k, env[k], v)
		}
	}
	for _, k := range []string{"CACHEDB_TLS_CA", "CACHEDB_TLS_CLIENT_CA", "CACHEDB_INSECURE"} {
		if _, ok := want[k]; !ok && env[k] != "" {
			t.Errorf("%s: %s=%q set", role, k, env[k])
		}
	}
	checkTLSVolume(t, role, spec, c, secret)
}

// checkTLSVolume checks that container c of spec mounts Secret secret at tlsMount.
func checkTLSVolume(t *testing.T, role string, spec corev1.PodSpec, c corev1.Container, secret string) {
	t.Helper()
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.MountPath == tlsMount {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly {
		t.Fatalf("%s: no read-only mount at %s (%+v)", role, tlsMount, c.VolumeMounts)
	}
	for _, v := range spec.Volumes {
		if v.Name == mount.Name {
			if v.Secret == nil || v.Secret.SecretName != secret {
				t.Errorf("%s: volume %s is %+v, want Secret %s", role, v.Name, v.VolumeSource, secret)
			}
			return
		}
	}
	t.Errorf("%s: no volume %s", role, mount.Name)
}

// checkTLSRuntime checks that the training runtime's steps reach the head over TLS with the
// files of Secret secret.
func checkTLSRuntime(t *testing.T, rt *trainerv1alpha1.ClusterTrainingRuntime, secret string, mutual bool) {
	t.Helper()
	for _, job := range rt.Spec.Template.Spec.ReplicatedJobs {
		spec := job.Template.Spec.Template.Spec
		c := spec.Containers[0]
		env := envOf(c)
		if mutual && (env["CACHEDB_TLS_CERT"] != tlsMount+"/tls.crt" || env["CACHEDB_TLS_KEY"] != tlsMount+"/tls.key") {
			t.Errorf("%s: no client certificate for mutual TLS: %v", job.Name, env)
		}
		if env["CACHEDB_TLS_CA"] == "" && env["CACHEDB_TLS"] != "true" {
			t.Errorf("%s: neither CACHEDB_TLS_CA nor CACHEDB_TLS: %v", job.Name, env)
		}
		if job.Name == "node" && !strings.HasPrefix(env["CACHEDB_ADDRESS"], "grpc+tls://") {
			t.Errorf("the trainer's CACHEDB_ADDRESS %q is not grpc+tls://", env["CACHEDB_ADDRESS"])
		}
		if env["CACHEDB_TLS_CA"] == "" && !mutual {
			if len(spec.Volumes) > 0 {
				t.Errorf("%s: mounts %+v though it trusts the system's roots", job.Name, spec.Volumes)
			}
			continue
		}
		checkTLSVolume(t, job.Name, spec, c, secret)
	}
}
