package deploy_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// etcdMembers is the 2+2+1 layout: an even split over two regions and one
// tie-breaker, so the loss of any one region leaves three of five voters.
var etcdMembers = map[string]int32{"us-east": 2, "eu-west": 2, "ap-south": 1}

// TestEtcdIsFiveMembersOverThreeRegions builds each region's etcd overlay
// and checks that together they form one five-member cluster laid out
// 2+2+1, that every member is in every member's initial cluster, that peer
// TLS is mutual, that the containers run non-root on a read-only root
// filesystem, and that every idemd.yaml lists exactly these members.
func TestEtcdIsFiveMembersOverThreeRegions(t *testing.T) {
	var members, initial []string
	clientURL := map[string]string{}
	for _, region := range regions {
		o := build(t, "etcd/overlays/"+region)
		ss := one(t, "StatefulSet", o.statefulSets)
		if want := "etcd-" + region; ss.Name != want {
			t.Errorf("%s: StatefulSet %q, want %q (member names are <statefulset>-<ordinal>)", region, ss.Name, want)
		}
		n := ptrValue(ss.Spec.Replicas, 1)
		if n != etcdMembers[region] {
			t.Errorf("%s: %d members, want %d", region, n, etcdMembers[region])
		}
		svc := one(t, "Service", o.services)
		if ss.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
			t.Errorf("%s: serviceName %q, want the headless Service %q publishing not-ready members", region, ss.Spec.ServiceName, svc.Name)
		}
		pod := &ss.Spec.Template.Spec
		c := container(t, pod, "etcd")
		checkNonRoot(t, pod, c)
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if env["ETCD_PEER_CLIENT_CERT_AUTH"] != "true" {
			t.Errorf("%s: peer TLS must require client certificates", region)
		}
		for _, k := range []string{"ETCD_CERT_FILE", "ETCD_KEY_FILE", "ETCD_TRUSTED_CA_FILE", "ETCD_PEER_CERT_FILE", "ETCD_PEER_KEY_FILE", "ETCD_PEER_TRUSTED_CA_FILE"} {
			if !mountedFromSecret(pod, c, env[k]) {
				t.Errorf("%s: %s=%q is not a file of a mounted Secret", region, k, env[k])
			}
		}
		for _, k := range []string{"ETCD_LISTEN_CLIENT_URLS", "ETCD_LISTEN_PEER_URLS", "ETCD_ADVERTISE_CLIENT_URLS", "ETCD_INITIAL_ADVERTISE_PEER_URLS"} {
			if !strings.HasPrefix(env[k], "https://") {
				t.Errorf("%s: %s=%q, want https", region, k, env[k])
			}
		}
		if initial == nil {
			initial = strings.Split(env["ETCD_INITIAL_CLUSTER"], ",")
		} else if got := strings.Split(env["ETCD_INITIAL_CLUSTER"], ","); !slices.Equal(got, initial) {
			t.Errorf("%s: ETCD_INITIAL_CLUSTER differs from the other regions'", region)
		}
		for i := range n {
			name := fmt.Sprintf("%s-%d", ss.Name, i)
			members = append(members, name)
			expand := strings.NewReplacer("$(POD_NAME)", name)
			clientURL[name] = expand.Replace(env["ETCD_ADVERTISE_CLIENT_URLS"])
			peer := name + "=" + expand.Replace(env["ETCD_INITIAL_ADVERTISE_PEER_URLS"])
			if !slices.Contains(initial, peer) {
				t.Errorf("%s: %s is not in ETCD_INITIAL_CLUSTER", region, peer)
			}
		}
		pdb := one(t, "PodDisruptionBudget", o.pdbs)
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("%s: PDB maxUnavailable, want 1", region)
		}
	}
	if len(members) != 5 || len(initial) != 5 {
		t.Errorf("%d members deployed, %d in the initial cluster; want 5 and 5", len(members), len(initial))
	}

	var urls []string
	for _, m := range members {
		urls = append(urls, clientURL[m])
	}
	sort.Strings(urls)
	for _, region := range regions {
		cfg := parseRegionConfig(t, build(t, "k8s/overlays/"+region))
		got := slices.Clone(cfg.Etcd.Endpoints)
		sort.Strings(got)
		if !slices.Equal(got, urls) {
			t.Errorf("%s idemd.yaml etcd.endpoints = %v, want the five members' client URLs %v", region, got, urls)
		}
	}
}
