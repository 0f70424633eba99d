package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/idemcoord/idemcoord/config"
)

// TestHelmChartLints runs Helm's own linter (what `helm lint` runs: the
// Chart.yaml, values.yaml against values.schema.json, the templates
// rendered and parsed as YAML) with each region's values and wants
// nothing above INFO; then with a region left out, and wants the linter
// to refuse it, so a clean result means something.
func TestHelmChartLints(t *testing.T) {
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			res := lint.RunAll(chartDir, regionValues(t, region), releaseNamespace, lint.WithKubeVersion(chartKubeVersion))
			for _, m := range res.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
	t.Run("without a region", func(t *testing.T) {
		vals := regionValues(t, "us-east")
		delete(vals, "region")
		res := lint.RunAll(chartDir, vals, releaseNamespace, lint.WithKubeVersion(chartKubeVersion))
		if res.HighestSeverity < support.ErrorSev {
			t.Errorf("helm lint accepts values without a region: %v", res.Messages)
		}
	})
}

// TestHelmChartRefusesBadValuesNamingTheField renders the chart with one
// bad value at a time and wants the install to fail with an error that
// names the field: the schema's JSON pointer for what values.schema.json
// can check, the value's path for what the templates check. (A value left
// out of the user's values takes values.yaml's default, as with `helm -f`;
// region has none.)
func TestHelmChartRefusesBadValuesNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(v map[string]any)
		field string // in the error
	}{
		{"no region", func(v map[string]any) { delete(v, "region") }, "missing property 'region'"},
		{"region not a name", func(v map[string]any) { v["region"] = "EU West" }, "/region"},
		{"region outside config.regions", func(v map[string]any) { v["region"] = "sa-east" }, `region: "sa-east" is not one of config.regions[].name`},
		{"no etcd endpoints", func(v map[string]any) { sub(v, "etcd")["endpoints"] = []any{} }, "/etcd/endpoints"},
		{"etcd endpoint without scheme", func(v map[string]any) { sub(v, "etcd")["endpoints"] = []any{"etcd-0:2379"} }, "/etcd/endpoints/0"},
		{"unknown store backend", func(v map[string]any) { sub(v, "store")["backend"] = "mysql" }, "/store/backend"},
		{"postgres without a dsn", func(v map[string]any) { sub(v, "store")["dsn"] = "" }, "/store/dsn"},
		{"patroni without clusters", func(v map[string]any) {
			sub(v, "store")["backend"] = "patroni"
			sub(v, "store")["dsn"] = ""
		}, "/store/patroni/clusters"},
		{"patroni with a dsn", func(v map[string]any) {
			sub(v, "store")["backend"] = "patroni"
			sub(sub(v, "store"), "patroni")["clusters"] = []any{map[string]any{"name": "us-east", "dsn": "postgres://idemd@pg:5432/idemcoord"}}
		}, "/store/dsn"},
		{"store secret named empty", func(v map[string]any) { sub(sub(v, "store"), "secret")["name"] = "" }, "/store/secret/name"},
		{"replicas not a number", func(v map[string]any) { v["replicas"] = "three" }, "/replicas"},
		{"misspelt top-level value", func(v map[string]any) { v["replica"] = 3 }, "'replica'"},
		{"pdb maxUnavailable zero", func(v map[string]any) { sub(v, "podDisruptionBudget")["maxUnavailable"] = 0 }, "/podDisruptionBudget/maxUnavailable"},
		{"probe path not absolute", func(v map[string]any) {
			sub(sub(sub(v, "probes"), "readiness"), "httpGet")["path"] = "readyz"
		}, "/probes/readiness/httpGet/path"},
		{"cross-region peer missing", func(v map[string]any) {
			sub(sub(v, "networkPolicy"), "crossRegion")["peers"] = []any{map[string]any{"region": "eu-west", "cidr": "198.51.100.0/24"}}
		}, `networkPolicy.crossRegion.peers: no address block for region "ap-south"`},
		{"config sets the store", func(v map[string]any) { sub(v, "config")["store"] = map[string]any{"dsn": "postgres://x"} }, "config.store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := regionValues(t, "us-east")
			tc.edit(vals)
			_, err := renderChart(t, vals)
			if err == nil {
				t.Fatalf("the chart renders; want an error naming %s", tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s:\n%v", tc.field, err)
			}
		})
	}
}

// sub returns the map under key k of v, creating it if missing.
func sub(v map[string]any, k string) map[string]any {
	m, ok := v[k].(map[string]any)
	if !ok {
		m = map[string]any{}
		v[k] = m
	}
	return m
}

// TestHelmChartRefusesAKubernetesWithoutPreStopSleep: the preStop sleep
// action needs Kubernetes 1.30; on an older cluster the install fails on
// the chart's kubeVersion instead of creating pods the API server refuses.
func TestHelmChartRefusesAKubernetesWithoutPreStopSleep(t *testing.T) {
	old := chartKubeVersion
	chartKubeVersion = &common.KubeVersion{Version: "v1.29.9", Major: "1", Minor: "29"}
	defer func() { chartKubeVersion = old }()
	_, err := renderChart(t, regionValues(t, "us-east"))
	if err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("render for Kubernetes 1.29: %v, want a kubeVersion error", err)
	}
}

// TestHelmChartWithPatroniStoreReachesTheMembers renders each region with
// values/patroni.yaml: idemd.yaml's store block is the one
// deploy/patroni/idemd-store.yaml documents (backend patroni, the same
// clusters and DSNs), and the NetworkPolicies open exactly the ports that
// configuration dials, the members' 5432 instead of CockroachDB's 26257,
// for idemd and for the migration Job.
func TestHelmChartWithPatroniStoreReachesTheMembers(t *testing.T) {
	b, err := os.ReadFile(patroniStoreFile)
	if err != nil {
		t.Fatal(err)
	}
	var block struct {
		Store map[string]any `json:"store"`
	}
	if err := yaml.Unmarshal(b, &block); err != nil {
		t.Fatal(err)
	}
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			h := helmObjects(t, regionValues(t, region, "patroni.yaml"))
			cfg := parseRegionConfig(t, h)

			// The same idemd.yaml with the documented block, as
			// TestPatroniStoreBlockReachesEachClustersMembers builds it.
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(one(t, "ConfigMap", h.configMaps).Data["idemd.yaml"]), &doc); err != nil {
				t.Fatal(err)
			}
			doc["store"] = block.Store
			y, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := config.Parse(y)
			if err != nil {
				t.Fatalf("idemd.yaml with %s: %v", patroniStoreFile, err)
			}
			if diff := cmp.Diff(want.Store, cfg.Store); diff != "" {
				t.Errorf("store block differs from %s (-documented +chart):\n%s", patroniStoreFile, diff)
			}
			if cfg.Store.Backend != config.PatroniStoreBackend {
				t.Errorf("store.backend = %q, want patroni", cfg.Store.Backend)
			}

			checkNetworkPolicy(t, h, cfg)

			for _, np := range h.netpols {
				if np.Name != "idemd-migrate" {
					continue
				}
				var ports []string
				for _, r := range np.Spec.Egress {
					for _, p := range r.Ports {
						ports = append(ports, ruleProto(p.Protocol)+"/"+p.Port.String())
					}
				}
				slices.Sort(ports)
				if want := []string{"TCP/53", "TCP/5432", "UDP/53"}; !slices.Equal(ports, want) {
					t.Errorf("NetworkPolicy idemd-migrate egress %v, want %v (DNS and the Patroni members)", ports, want)
				}
			}
		})
	}
}

// TestProductionBinariesDoNotLinkHelm: the Helm SDK is a test dependency
// of deploy/ only; idemd and idemctl must not import it (nor the
// Kubernetes client it brings).
func TestProductionBinariesDoNotLinkHelm(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "./cmd/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/...: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/idemcoord/idemcoord/config") {
		t.Fatalf("go list -deps ./cmd/... lists %d packages, not config: not the binaries' dependencies", len(deps))
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "helm.sh/") || strings.HasPrefix(p, "k8s.io/client-go") {
			t.Errorf("the production binaries import %s", p)
		}
	}
}
