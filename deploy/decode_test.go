package deploy

import (
	"fmt"

	trainerv1alpha1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"
)

// decoded is a rendered object as its API type.
type decoded struct {
	object
	value any
}

// types maps apiVersion/kind to a constructor of the API type the object must decode into.
var types = map[string]func() any{
	"v1/ServiceAccount":             func() any { return &corev1.ServiceAccount{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"v1/ConfigMap":                  func() any { return &corev1.ConfigMap{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
	"leaderworkerset.x-k8s.io/v1/LeaderWorkerSet":          func() any { return &lwsv1.LeaderWorkerSet{} },
	"monitoring.coreos.com/v1/ServiceMonitor":              func() any { return &monitoringv1.ServiceMonitor{} },
	"trainer.kubeflow.org/v1alpha1/ClusterTrainingRuntime": func() any { return &trainerv1alpha1.ClusterTrainingRuntime{} },
	"cert-manager.io/v1/Certificate":                       func() any { return &certificate{} },
}

// decodeStrict decodes o into its API type: an unknown apiVersion/kind, an unknown field, a
// duplicate key or a value of the wrong type is an error.
func decodeStrict(o object) (decoded, error) {
	mk, ok := types[o.apiVersion+"/"+o.kind]
	if !ok {
		return decoded{}, fmt.Errorf("no API type known for %s %s", o.apiVersion, o.kind)
	}
	v := mk()
	if err := yaml.UnmarshalStrict(o.raw, v); err != nil {
		return decoded{}, err
	}
	if c, ok := v.(interface{ validate() error }); ok {
		if err := c.validate(); err != nil {
			return decoded{}, err
		}
	}
	return decoded{object: o, value: v}, nil
}
