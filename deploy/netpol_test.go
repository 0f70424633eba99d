package deploy_test

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/idemcoord/idemcoord/config"
)

// TestNetworkPolicyAdmitsOnlyTheGatewayPort checks the union of the
// NetworkPolicies that select idemd's pods: ingress only on the gateway
// port (clients, Prometheus for /metrics, and the other regions' gateways
// forwarding), and egress exactly to the ports the region's idemd.yaml
// dials: DNS, the store, etcd, the upstream and the other regions'
// gateways.
func TestNetworkPolicyAdmitsOnlyTheGatewayPort(t *testing.T) {
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			o := build(t, "k8s/overlays/"+region)
			checkNetworkPolicy(t, o, parseRegionConfig(t, o))
		})
	}
}

// checkNetworkPolicy checks the NetworkPolicies of one region's objects
// against its idemd.yaml (cfg): see TestNetworkPolicyAdmitsOnlyTheGatewayPort.
func checkNetworkPolicy(t *testing.T, o *objects, cfg *config.Config) {
	t.Helper()
	d := one(t, "Deployment", o.deployments)
	c := container(t, &d.Spec.Template.Spec, "idemd")
	gateway := portNumber(c, strPort("http"))

	var ingress []networkingv1.NetworkPolicyIngressRule
	var egress []networkingv1.NetworkPolicyEgressRule
	for _, np := range o.netpols {
		if !selects(np.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) {
			continue
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("NetworkPolicy %s: policyTypes %v, want Ingress and Egress", np.Name, np.Spec.PolicyTypes)
		}
		ingress = append(ingress, np.Spec.Ingress...)
		egress = append(egress, np.Spec.Egress...)
	}
	if len(ingress) == 0 {
		t.Fatal("no NetworkPolicy selects the idemd pods")
	}

	var monitoring, crossRegion int
	for i, r := range ingress {
		if len(r.From) == 0 || len(r.Ports) == 0 {
			t.Errorf("ingress rule %d admits every source or every port: %+v", i, r)
		}
		for _, p := range r.Ports {
			if got := ruleProto(p.Protocol) + "/" + p.Port.String(); got != fmt.Sprintf("TCP/%d", gateway) {
				t.Errorf("ingress rule %d admits %s, want only the gateway port TCP/%d", i, got, gateway)
			}
		}
		for _, peer := range r.From {
			if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "monitoring" {
				monitoring++
			}
			if peer.IPBlock != nil {
				crossRegion++
			}
		}
	}
	if monitoring == 0 {
		t.Errorf("no ingress rule admits Prometheus from the monitoring namespace")
	}
	if crossRegion != len(regions)-1 {
		t.Errorf("ingress admits %d address blocks, want one per other region (%d)", crossRegion, len(regions)-1)
	}

	want := map[string]bool{"UDP/53": true, "TCP/53": true}
	for _, p := range storePorts(t, cfg) {
		want[fmt.Sprintf("TCP/%d", p)] = true
	}
	want[fmt.Sprintf("TCP/%d", urlPort(t, cfg.Upstream))] = true
	for _, e := range cfg.Etcd.Endpoints {
		want[fmt.Sprintf("TCP/%d", urlPort(t, e))] = true
	}
	for _, r := range cfg.Regions {
		if r.Name != cfg.Region {
			want[fmt.Sprintf("TCP/%d", urlPort(t, r.URL))] = true
		}
	}
	got := map[string]bool{}
	for i, r := range egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			t.Errorf("egress rule %d allows every destination or every port: %+v", i, r)
		}
		for _, p := range r.Ports {
			got[ruleProto(p.Protocol)+"/"+p.Port.String()] = true
		}
	}
	if diff := cmp.Diff(sortedKeys(want), sortedKeys(got)); diff != "" {
		t.Errorf("egress ports differ from what idemd.yaml dials (-want +got):\n%s", diff)
	}
}

// storePorts are the ports of every store host idemd.yaml names: the
// postgres backend's DSN, or every host of every patroni cluster's
// multi-host DSN (as pgx reads it).
func storePorts(t *testing.T, cfg *config.Config) []int32 {
	t.Helper()
	if cfg.Store.Backend != config.PatroniStoreBackend {
		return []int32{urlPort(t, cfg.Store.DSN)}
	}
	var ports []int32
	for _, c := range cfg.Store.Patroni.Clusters {
		u, err := url.Parse(c.DSN)
		if err != nil {
			t.Fatalf("store.patroni cluster %s: %v", c.Name, err)
		}
		// TLS off here: the CA file exists only in the pod.
		q := u.Query()
		q.Set("sslmode", "disable")
		q.Del("sslrootcert")
		u.RawQuery = q.Encode()
		pc, err := pgconn.ParseConfig(u.String())
		if err != nil {
			t.Fatalf("store.patroni cluster %s: %v", c.Name, err)
		}
		ports = append(ports, int32(pc.Port))
		for _, f := range pc.Fallbacks {
			ports = append(ports, int32(f.Port))
		}
	}
	return ports
}

// ruleProto returns a NetworkPolicy port's protocol (default TCP).
func ruleProto(p *corev1.Protocol) string {
	if p == nil {
		return string(corev1.ProtocolTCP)
	}
	return string(*p)
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
