package deploy_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
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
			cfg := parseRegionConfig(t, o)
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
			want[fmt.Sprintf("TCP/%d", urlPort(t, cfg.Store.DSN))] = true
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
		})
	}
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
