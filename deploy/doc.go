// Package deploy holds cachedb's container image recipe, Helm chart and plain manifests, and
// the tests that check them without a cluster: the image's static binary, and every rendered
// object decoded strictly against the Kubernetes, LeaderWorkerSet, Prometheus Operator and
// Kubeflow Trainer API types.
package deploy
