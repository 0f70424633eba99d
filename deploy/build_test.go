// Package deploy_test checks the files under deploy/: every Kustomize
// overlay builds with the kustomize Go API and decodes, with unknown fields
// refused, into the k8s.io/api types; the properties an operator relies on
// (probes, limits, non-root, drain, secrets by reference, network policy)
// hold; each region's idemd.yaml is a configuration idemd accepts; and the
// metric names used by the alert rules and the dashboard are real.
package deploy_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// regions are the overlays under k8s/overlays and etcd/overlays, in the
// order of the regions list of every idemd.yaml.
var regions = []string{"us-east", "eu-west", "ap-south"}

// objects is one kustomize build (or one Helm rendering), decoded.
type objects struct {
	deployments     []*appsv1.Deployment
	statefulSets    []*appsv1.StatefulSet
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	serviceAccounts []*corev1.ServiceAccount
	pdbs            []*policyv1.PodDisruptionBudget
	netpols         []*networkingv1.NetworkPolicy
	jobs            []*batchv1.Job
	namespaces      map[string]bool
	// all holds every object above by "Kind/namespace/name".
	all map[string]any
}

// build runs kustomize on dir (relative to deploy/) and decodes every
// object strictly: a field the k8s.io/api type lacks (a typo, a field of
// another kind or API version) fails the test.
func build(t *testing.T, dir string) *objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.FromSlash(dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var docs [][]byte
	for _, r := range res.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, y)
	}
	return decode(t, dir, docs)
}

// decode decodes rendered objects, one YAML document each, strictly into
// their k8s.io/api types; where names the source in failures.
func decode(t *testing.T, where string, docs [][]byte) *objects {
	t.Helper()
	o := &objects{namespaces: map[string]bool{}, all: map[string]any{}}
	for _, y := range docs {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(y, &head); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		kind, name := head.Kind, head.Metadata.Name
		var into any
		switch kind {
		case "Deployment":
			v := &appsv1.Deployment{}
			o.deployments, into = append(o.deployments, v), v
		case "StatefulSet":
			v := &appsv1.StatefulSet{}
			o.statefulSets, into = append(o.statefulSets, v), v
		case "Service":
			v := &corev1.Service{}
			o.services, into = append(o.services, v), v
		case "ConfigMap":
			v := &corev1.ConfigMap{}
			o.configMaps, into = append(o.configMaps, v), v
		case "ServiceAccount":
			v := &corev1.ServiceAccount{}
			o.serviceAccounts, into = append(o.serviceAccounts, v), v
		case "PodDisruptionBudget":
			v := &policyv1.PodDisruptionBudget{}
			o.pdbs, into = append(o.pdbs, v), v
		case "NetworkPolicy":
			v := &networkingv1.NetworkPolicy{}
			o.netpols, into = append(o.netpols, v), v
		case "Job":
			v := &batchv1.Job{}
			o.jobs, into = append(o.jobs, v), v
		case "Secret":
			t.Fatalf("%s renders a Secret %q: secrets are created by the operator, never committed", where, name)
		default:
			t.Fatalf("%s renders an unexpected %s %q", where, kind, name)
		}
		if err := yaml.UnmarshalStrict(y, into); err != nil {
			t.Fatalf("%s: %s %q does not decode strictly: %v", where, kind, name, err)
		}
		key := kind + "/" + head.Metadata.Namespace + "/" + name
		if o.all[key] != nil {
			t.Fatalf("%s renders %s twice", where, key)
		}
		o.all[key] = into
		o.namespaces[head.Metadata.Namespace] = true
	}
	return o
}

// one returns the only element of s, failing the test otherwise.
func one[T any](t *testing.T, what string, s []T) T {
	t.Helper()
	if len(s) != 1 {
		t.Fatalf("want exactly one %s, got %d", what, len(s))
	}
	return s[0]
}

// container returns the pod template's container named name.
func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// portNumber resolves a probe or target port (number or name) against c.
func portNumber(c *corev1.Container, p fmt.Stringer) int32 {
	for _, cp := range c.Ports {
		if cp.Name == p.String() || fmt.Sprint(cp.ContainerPort) == p.String() {
			return cp.ContainerPort
		}
	}
	return -1
}

// selects reports whether selector (matchLabels only) selects labels.
func selects(selector map[string]string, labels map[string]string) bool {
	if len(selector) == 0 {
		return false // an empty selector here would be a mistake: it selects everything
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// quietLogger discards the daemon's logs.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
