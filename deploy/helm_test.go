package deploy_test

import (
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idemcoord/idemcoord/config"
)

// The chart and the example values that mirror the overlays
// (deploy/README.md, "Helm").
const (
	chartDir         = "helm/idemcoord"
	helmValuesDir    = "helm/values"
	releaseName      = "idemd"
	releaseNamespace = "idemcoord"
)

// chartKubeVersion is the oldest Kubernetes the chart supports (its
// Chart.yaml kubeVersion: preStop's sleep action needs 1.30).
var chartKubeVersion = &common.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// helmOnlyLabels are the labels the chart adds to every object's metadata
// besides the overlays' own; selectors and pod templates have none of them.
var helmOnlyLabels = []string{
	"app.kubernetes.io/instance",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/version",
	"helm.sh/chart",
}

// chartCommonLabels are on every object of the chart; the overlays put
// them on the base's objects only (not on the ConfigMap or
// idemd-cross-region).
var chartCommonLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/part-of"}

// regionValues merges value files the way `helm install -f common.yaml -f
// <extra>... -f <region>.yaml` does (helm/values/*.yaml).
func regionValues(t *testing.T, region string, extra ...string) map[string]any {
	t.Helper()
	files := []string{filepath.Join(helmValuesDir, "common.yaml")}
	for _, e := range extra {
		files = append(files, filepath.Join(helmValuesDir, e))
	}
	files = append(files, filepath.Join(helmValuesDir, region+".yaml"))
	opts := values.Options{ValueFiles: files}
	v, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		t.Fatalf("values %v: %v", files, err)
	}
	return v
}

// renderChart renders the chart as `helm template` does: a client-only
// dry-run install, which loads the chart, merges vals over values.yaml,
// validates them against values.schema.json, checks kubeVersion and
// renders the templates. It returns the manifest (hooks included).
func renderChart(t *testing.T, vals map[string]any) (string, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	inst := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = releaseName
	inst.Namespace = releaseNamespace
	inst.Replace = true
	inst.KubeVersion = chartKubeVersion
	r, err := inst.Run(chrt, vals)
	if err != nil {
		return "", err
	}
	rel, ok := r.(*release.Release)
	if !ok {
		t.Fatalf("install returned a %T", r)
	}
	var b strings.Builder
	b.WriteString(rel.Manifest)
	for _, h := range rel.Hooks {
		b.WriteString("\n---\n" + h.Manifest)
	}
	return b.String(), nil
}

// helmObjects renders the chart with vals and decodes the objects as
// build does the overlays'.
func helmObjects(t *testing.T, vals map[string]any) *objects {
	t.Helper()
	manifest, err := renderChart(t, vals)
	if err != nil {
		t.Fatalf("render %s: %v", chartDir, err)
	}
	var docs [][]byte
	for _, d := range releaseutil.SplitManifests(manifest) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return decode(t, chartDir, docs)
}

// kustomizeHash is the content hash kustomize's configMapGenerator puts
// at the end of the ConfigMap's name.
var kustomizeHash = regexp.MustCompile(`(idemd-config)-[a-z0-9]{10}$`)

// TestHelmChartRendersTheOverlaysObjects renders the chart for each region
// (values/common.yaml and values/<region>.yaml) and checks it produces the
// objects of that region's overlay: the same kinds, names and namespaces,
// each object equal field by field (images, command, env, ports, probes,
// resources, security contexts, volumes, selectors, PDB, NetworkPolicy
// rules), and an idemd.yaml config.Parse reads as the same configuration.
// The differences Helm brings are the ones allowed: Helm's labels on
// metadata, the ConfigMap named without kustomize's content hash, and the
// checksum/config annotation that rolls the pods instead.
func TestHelmChartRendersTheOverlaysObjects(t *testing.T) {
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			o := build(t, "k8s/overlays/"+region)
			h := helmObjects(t, regionValues(t, region))

			wantCfg, gotCfg := parseRegionConfig(t, o), parseRegionConfig(t, h)
			if wantCfg.Store.Backend == "" {
				wantCfg.Store.Backend = config.DefaultStoreBackend // the chart writes the default out
			}
			if diff := cmp.Diff(wantCfg, gotCfg); diff != "" {
				t.Errorf("the chart's idemd.yaml differs from the overlay's (-overlay +chart):\n%s", diff)
			}

			want := map[string]any{}
			for key, obj := range o.all {
				key = kustomizeHash.ReplaceAllString(key, "$1")
				normalizeOverlayObject(obj)
				want[key] = obj
			}
			if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(h.all))); diff != "" {
				t.Fatalf("objects (Kind/namespace/name) differ (-overlay +chart):\n%s", diff)
			}
			for key, got := range h.all {
				normalizeChartObject(t, key, got, want[key])
				if diff := cmp.Diff(want[key], got, quantityEqual); diff != "" {
					t.Errorf("%s differs (-overlay +chart):\n%s", key, diff)
				}
			}
		})
	}
}

// quantityEqual compares resource quantities by value ("2" equals 2).
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// normalizeOverlayObject names the ConfigMap without its content hash,
// wherever it is referenced, and drops the ConfigMap's data (compared as
// parsed configuration instead).
func normalizeOverlayObject(obj any) {
	var pod *corev1.PodSpec
	switch v := obj.(type) {
	case *corev1.ConfigMap:
		v.Name = kustomizeHash.ReplaceAllString(v.Name, "$1")
		v.Data = nil
	case *appsv1.Deployment:
		pod = &v.Spec.Template.Spec
	case *batchv1.Job:
		pod = &v.Spec.Template.Spec
	}
	if pod == nil {
		return
	}
	for i := range pod.Volumes {
		if cm := pod.Volumes[i].ConfigMap; cm != nil {
			cm.Name = kustomizeHash.ReplaceAllString(cm.Name, "$1")
		}
	}
}

// normalizeChartObject checks what the chart adds to the overlay's object
// want and removes it from got: every overlay label is on got with the
// same value, the others are Helm's or the chart's common labels; the
// Deployment's pod template carries checksum/config.
func normalizeChartObject(t *testing.T, key string, got, want any) {
	t.Helper()
	g, w := got.(metav1.Object), want.(metav1.Object)
	labels := maps.Clone(g.GetLabels())
	for k, v := range w.GetLabels() {
		if labels[k] != v {
			t.Errorf("%s: label %s = %q, want %q as in the overlay", key, k, labels[k], v)
		}
	}
	for _, k := range helmOnlyLabels {
		if _, ok := labels[k]; !ok {
			t.Errorf("%s: no label %s", key, k)
		}
	}
	for k := range labels {
		_, overlay := w.GetLabels()[k]
		if !overlay && !slices.Contains(helmOnlyLabels, k) && !slices.Contains(chartCommonLabels, k) {
			t.Errorf("%s: label %s, neither the overlay's nor the chart's", key, k)
		}
	}
	g.SetLabels(w.GetLabels())
	switch v := got.(type) {
	case *corev1.ConfigMap:
		v.Data = nil
	case *appsv1.Deployment:
		a := v.Spec.Template.Annotations
		if len(a["checksum/config"]) != 64 {
			t.Errorf("%s: pod template annotation checksum/config = %q, want the idemd.yaml's sha256", key, a["checksum/config"])
		}
		delete(a, "checksum/config")
	}
}

// TestHelmChartRollsThePodsWhenTheConfigChanges: the pod template's
// checksum/config follows idemd.yaml, so `helm upgrade` with a changed
// configuration replaces the pods (the overlays get this from the content
// hash in the ConfigMap's name), and an unchanged one leaves them.
func TestHelmChartRollsThePodsWhenTheConfigChanges(t *testing.T) {
	checksum := func(vals map[string]any) string {
		d := one(t, "Deployment", helmObjects(t, vals).deployments)
		return d.Spec.Template.Annotations["checksum/config"]
	}
	before := checksum(regionValues(t, "us-east"))
	if again := checksum(regionValues(t, "us-east")); again != before {
		t.Errorf("checksum/config %s, then %s for the same values: every upgrade would roll the pods", before, again)
	}
	vals := regionValues(t, "us-east")
	vals["config"].(map[string]any)["defaults"].(map[string]any)["ttl"] = "12h"
	if after := checksum(vals); after == before {
		t.Errorf("checksum/config unchanged (%s) after config.defaults.ttl changed: the pods would keep the old idemd.yaml", after)
	}
}
