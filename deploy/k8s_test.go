package deploy_test

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/idemcoord/idemcoord/config"
)

// drainTimeout is how long `idemd run` lets in-flight requests finish after
// SIGTERM: the config's drain_timeout, whose default the overlays keep.
// deploy/k8s/README.md documents the same figure.
const drainTimeout = config.DefaultDrainTimeout

// operatorSecrets are the Secrets the operator creates before applying an
// overlay (deploy/k8s/README.md); manifests may reference only these.
var operatorSecrets = []string{"idemd-auth", "idemd-store", "idemd-etcd-ca"}

// TestOverlaysDeployASafeIdemd builds each region's overlay and checks what
// an operator relies on: probes on the right paths and port, bounded
// resources, a non-root read-only container without privileges, a grace
// period longer than preStop plus the drain, a PDB and a Service that select
// the pods, and secrets referenced, never embedded.
func TestOverlaysDeployASafeIdemd(t *testing.T) {
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			o := build(t, "k8s/overlays/"+region)
			if want := map[string]bool{"idemcoord": true}; !cmp.Equal(o.namespaces, want) {
				t.Errorf("namespaces = %v, want only idemcoord", o.namespaces)
			}
			d := one(t, "Deployment", o.deployments)
			pod := &d.Spec.Template.Spec
			c := container(t, pod, "idemd")
			podLabels := d.Spec.Template.Labels
			if podLabels["idemcoord.dev/region"] != region {
				t.Errorf("pod label idemcoord.dev/region = %q, want %q (dashboards and relabeling use it)", podLabels["idemcoord.dev/region"], region)
			}
			if !selects(d.Spec.Selector.MatchLabels, podLabels) {
				t.Errorf("Deployment selector %v does not select its pods %v", d.Spec.Selector.MatchLabels, podLabels)
			}
			gateway := portNumber(c, strPort("http"))
			if gateway <= 0 {
				t.Fatalf("container has no port named http: %+v", c.Ports)
			}

			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("%s probe: want an httpGet on %s", p.name, p.path)
					continue
				}
				if got := p.probe.HTTPGet.Path; got != p.path {
					t.Errorf("%s probe path = %q, want %q", p.name, got, p.path)
				}
				if got := portNumber(c, &p.probe.HTTPGet.Port); got != gateway {
					t.Errorf("%s probe port %s = %d, want the gateway port %d", p.name, p.probe.HTTPGet.Port.String(), got, gateway)
				}
			}

			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, okReq := c.Resources.Requests[res]
				lim, okLim := c.Resources.Limits[res]
				if !okReq || !okLim {
					t.Errorf("%s: want both a request and a limit, got request %v limit %v", res, okReq, okLim)
				} else if req.Cmp(lim) > 0 {
					t.Errorf("%s request %s exceeds its limit %s", res, req.String(), lim.String())
				}
			}

			checkNonRoot(t, pod, c)

			grace := time.Duration(ptrValue(pod.TerminationGracePeriodSeconds, 30)) * time.Second
			var preStop time.Duration
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
				preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
			}
			if grace <= preStop+drainTimeout {
				t.Errorf("terminationGracePeriodSeconds = %v, want more than preStop %v + drain %v, or in-flight requests are killed", grace, preStop, drainTimeout)
			}
			if ptrValue(pod.AutomountServiceAccountToken, true) {
				t.Errorf("automountServiceAccountToken must be false: idemd uses no Kubernetes API")
			}

			checkSecretsReferenced(t, pod)

			pdb := one(t, "PodDisruptionBudget", o.pdbs)
			if pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, podLabels) {
				t.Errorf("PDB selector does not select the pods")
			}
			if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
				t.Errorf("PDB sets neither maxUnavailable nor minAvailable")
			}
			if mu := pdb.Spec.MaxUnavailable; mu != nil && (mu.IntValue() < 1 || int32(mu.IntValue()) >= ptrValue(d.Spec.Replicas, 1)) {
				t.Errorf("PDB maxUnavailable = %s, want at least 1 and fewer than the %d replicas", mu.String(), ptrValue(d.Spec.Replicas, 1))
			}

			svc := one(t, "Service", o.services)
			if !selects(svc.Spec.Selector, podLabels) {
				t.Errorf("Service selector %v does not select the pods", svc.Spec.Selector)
			}
			for _, sp := range svc.Spec.Ports {
				if got := portNumber(c, &sp.TargetPort); got != gateway {
					t.Errorf("Service port %d targets %s = %d, want the gateway port %d", sp.Port, sp.TargetPort.String(), got, gateway)
				}
			}
		})
	}
}

// checkNonRoot checks the pod and container security contexts.
func checkNonRoot(t *testing.T, pod *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatalf("want both a pod and a container securityContext")
	}
	if !ptrValue(psc.RunAsNonRoot, false) && !ptrValue(sc.RunAsNonRoot, false) {
		t.Errorf("runAsNonRoot is not set")
	}
	if uid := ptrValue(sc.RunAsUser, ptrValue(psc.RunAsUser, 0)); uid == 0 {
		t.Errorf("runAsUser is 0 or unset; want the image's nonroot uid")
	}
	if ptrValue(sc.AllowPrivilegeEscalation, true) {
		t.Errorf("allowPrivilegeEscalation must be false")
	}
	if !ptrValue(sc.ReadOnlyRootFilesystem, false) {
		t.Errorf("readOnlyRootFilesystem must be true")
	}
	if ptrValue(sc.Privileged, false) {
		t.Errorf("privileged must not be true")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities = %+v, want drop [ALL] and nothing added", sc.Capabilities)
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile must be RuntimeDefault")
	}
}

// checkSecretsReferenced checks that every secret is a reference to one the
// operator creates, and that no environment variable carries a literal
// that looks like a credential.
func checkSecretsReferenced(t *testing.T, pod *corev1.PodSpec) {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Secret != nil && !slices.Contains(operatorSecrets, v.Secret.SecretName) {
			t.Errorf("volume %s uses Secret %q, not one of the documented %v", v.Name, v.Secret.SecretName, operatorSecrets)
		}
	}
	for _, c := range pod.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !slices.Contains(operatorSecrets, e.ValueFrom.SecretKeyRef.Name) {
				t.Errorf("env %s uses Secret %q, not one of the documented %v", e.Name, e.ValueFrom.SecretKeyRef.Name, operatorSecrets)
			}
			upper := strings.ToUpper(e.Name)
			if e.Value != "" && (strings.Contains(upper, "PASSWORD") || strings.Contains(upper, "SECRET") || strings.Contains(upper, "TOKEN")) {
				t.Errorf("env %s has a literal value; secrets come from secretKeyRef", e.Name)
			}
		}
	}
}

// strPort is a port given by name, as probes and Services give it.
type strPort string

func (p strPort) String() string { return string(p) }

// ptrValue returns *p, or def when p is nil.
func ptrValue[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// urlPort returns the port of a URL, defaulting by scheme.
func urlPort(t *testing.T, raw string) int32 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443", "postgres": "5432", "postgresql": "5432"}[u.Scheme]
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%q: no port", raw)
	}
	return int32(n)
}

// listenPort returns the port of a host:port listen address.
func listenPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// writeSecret writes a 32-byte HS256 secret into a temporary file and
// returns its path.
func writeSecret(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hs256.secret")
	if err := os.WriteFile(path, []byte(strings.Repeat("s", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseRegionConfig returns the idemd.yaml the overlay's ConfigMap holds,
// parsed and validated by config.Parse.
func parseRegionConfig(t *testing.T, o *objects) *config.Config {
	t.Helper()
	cm := one(t, "ConfigMap", o.configMaps)
	if !strings.HasPrefix(cm.Name, "idemd-config") {
		t.Fatalf("ConfigMap %q, want idemd-config-<hash>", cm.Name)
	}
	data, ok := cm.Data["idemd.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no idemd.yaml", cm.Name)
	}
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		t.Fatalf("config.Parse rejects the ConfigMap's idemd.yaml: %v", err)
	}
	return cfg
}
