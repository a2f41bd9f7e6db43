package deploy

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"sigs.k8s.io/yaml"
)

// chartDir is the Helm chart, relative to this package.
const chartDir = "helm/cachedb"

// kubeVersion is the Kubernetes version charts are rendered for: the oldest the chart supports
// (Chart.yaml's kubeVersion).
const kubeVersion = "v1.27.0"

// render does what `helm template RELEASE deploy/helm/cachedb --namespace NS -f values` does
// and returns the manifest: every object, each after a "# Source:" comment.
func render(release, namespace string, values map[string]any) (string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return "", err
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return "", err
	}
	cfg := &action.Configuration{
		KubeClient:   &fake.PrintingKubeClient{Out: io.Discard},
		Releases:     storage.Init(driver.NewMemory()),
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	install := action.NewInstall(cfg)
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = namespace
	install.KubeVersion = kv
	rel, err := install.Run(chrt, values)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// lint does what `helm lint --strict` does: errors and warnings fail.
func lint(values map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = "cachedb"
	res := l.Run([]string{chartDir}, values)
	if len(res.Errors) == 0 {
		return nil
	}
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("helm lint: %s", strings.Join(msgs, "; "))
}

// object is one rendered manifest document: its source template and its decoded body.
type object struct {
	source     string
	apiVersion string
	kind       string
	name       string
	raw        []byte
}

// split cuts a rendered manifest into its objects; empty documents are dropped.
func split(manifest string) ([]object, error) {
	var out []object
	for _, doc := range strings.Split(manifest, "\n---") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		var source string
		var body bytes.Buffer
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok && source == "" {
				source = s
				continue
			}
			body.WriteString(line + "\n")
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(body.Bytes(), &head); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if head.Kind == "" {
			if strings.TrimSpace(stripComments(body.String())) != "" {
				return nil, fmt.Errorf("%s: a document without a kind:\n%s", source, body.String())
			}
			continue
		}
		out = append(out, object{source: source, apiVersion: head.APIVersion, kind: head.Kind, name: head.Metadata.Name, raw: body.Bytes()})
	}
	return out, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// renderObjects renders the chart and decodes every object strictly (decode.go).
func renderObjects(t *testing.T, values map[string]any) []decoded {
	t.Helper()
	manifest, err := render("cachedb", "ml", values)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	objs, err := split(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var out []decoded
	for _, o := range objs {
		d, err := decodeStrict(o)
		if err != nil {
			t.Errorf("%s (%s %s): %v", o.source, o.kind, o.name, err)
			continue
		}
		out = append(out, d)
	}
	return out
}
