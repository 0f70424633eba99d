package deploy_test

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/idemcoord/idemcoord/config"
)

// patroniConfig is the part of patroni.yml the tests read.
type patroniConfig struct {
	Namespace string `json:"namespace"`
	Etcd3     *struct {
		Hosts    []string `json:"hosts"`
		Protocol string   `json:"protocol"`
	} `json:"etcd3"`
	Etcd       any `json:"etcd"`
	Kubernetes any `json:"kubernetes"`
	Consul     any `json:"consul"`
	Zookeeper  any `json:"zookeeper"`
	Exhibitor  any `json:"exhibitor"`
	Raft       any `json:"raft"`
	Bootstrap  struct {
		DCS struct {
			SynchronousMode       any  `json:"synchronous_mode"`
			SynchronousModeStrict bool `json:"synchronous_mode_strict"`
			SynchronousNodeCount  int  `json:"synchronous_node_count"`
			FailsafeMode          bool `json:"failsafe_mode"`
			PostgreSQL            struct {
				UsePgRewind bool           `json:"use_pg_rewind"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"postgresql"`
		} `json:"dcs"`
	} `json:"bootstrap"`
	Tags map[string]any `json:"tags"`
}

// patroniMember is one member as its overlay deploys it.
type patroniMember struct {
	scope, name, region, pgAddr string
}

// TestPatroniClustersAreStrictSynchronousOverThreeRegions builds each
// region's Patroni overlay, decodes every object strictly and checks the
// settings the store's safety rests on (docs/store-ha.md): the DCS is the
// deployment's etcd over the v3 API and nothing else, synchronous_mode is
// quorum (quorum commit, ANY 1 of the two other regions' members) and
// synchronous_mode_strict on, a demoted primary rejoins with
// pg_rewind, failsafe mode is off; each of the three clusters has exactly
// one member in each region (so its synchronous standby is in another
// region); every region has a
// PodDisruptionBudget over its members; probes use Patroni's /liveness
// and /readiness; passwords come from Secrets.
func TestPatroniClustersAreStrictSynchronousOverThreeRegions(t *testing.T) {
	var members []patroniMember
	var etcd3Hosts []string
	for _, region := range regions {
		o := build(t, "patroni/overlays/"+region)
		if len(o.statefulSets) != len(regions) {
			t.Fatalf("%s: %d StatefulSets, want one member of each of the %d store clusters", region, len(o.statefulSets), len(regions))
		}
		if !o.namespaces["patroni"] || len(o.namespaces) != 1 {
			t.Errorf("%s: namespaces %v, want only patroni", region, o.namespaces)
		}
		cms := map[string]*corev1.ConfigMap{}
		for _, cm := range o.configMaps {
			cms[cm.Name] = cm
		}
		pdb := one(t, "PodDisruptionBudget", o.pdbs)
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("%s: PDB maxUnavailable, want 1", region)
		}
		for _, ss := range o.statefulSets {
			if n := ptrValue(ss.Spec.Replicas, 1); n != 1 {
				t.Errorf("%s: %s has %d replicas, want 1 (one StatefulSet per member)", region, ss.Name, n)
			}
			labels := ss.Spec.Template.Labels
			if labels["idemcoord.dev/region"] != region {
				t.Errorf("%s: %s is labelled region %q", region, ss.Name, labels["idemcoord.dev/region"])
			}
			if !selects(pdb.Spec.Selector.MatchLabels, labels) {
				t.Errorf("%s: the PDB does not cover %s", region, ss.Name)
			}
			if !selects(ss.Spec.Selector.MatchLabels, labels) || ss.Spec.Selector.MatchLabels["idemcoord.dev/patroni-scope"] == "" {
				t.Errorf("%s: %s's selector %v must select its own pods by scope", region, ss.Name, ss.Spec.Selector.MatchLabels)
			}
			var svc *corev1.Service
			for _, s := range o.services {
				if s.Name == ss.Spec.ServiceName {
					svc = s
				}
			}
			if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || !selects(svc.Spec.Selector, labels) {
				t.Errorf("%s: %s: serviceName %q, want its own headless Service publishing not-ready members", region, ss.Name, ss.Spec.ServiceName)
			}

			pod := &ss.Spec.Template.Spec
			c := container(t, pod, "patroni")
			checkNonRoot(t, pod, c)
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: %s: want a CPU request and a memory limit", region, ss.Name)
			}
			rest := int32(-1)
			for _, p := range c.Ports {
				if p.Name == "rest" {
					rest = p.ContainerPort
				}
			}
			for what, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != "/"+what || portNumber(c, &pr.HTTPGet.Port) != rest {
					t.Errorf("%s: %s: %s probe must GET Patroni's /%s on the REST port", region, ss.Name, what, what)
				}
			}
			for _, name := range []string{"PATRONI_SUPERUSER_PASSWORD", "PATRONI_REPLICATION_PASSWORD"} {
				i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
				if i < 0 || c.Env[i].Value != "" || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil {
					t.Errorf("%s: %s: %s must come from a Secret", region, ss.Name, name)
				}
			}

			// The member's own settings, and the shared patroni.yml.
			var member map[string]string
			var cfg *patroniConfig
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil && cms[ef.ConfigMapRef.Name] != nil {
					member = cms[ef.ConfigMapRef.Name].Data
				}
			}
			for _, v := range pod.Volumes {
				if v.ConfigMap == nil || cms[v.ConfigMap.Name] == nil {
					continue
				}
				data, ok := cms[v.ConfigMap.Name].Data["patroni.yml"]
				if !ok {
					continue
				}
				cfg = &patroniConfig{}
				if err := yaml.Unmarshal([]byte(data), cfg); err != nil {
					t.Fatalf("%s: %s: patroni.yml: %v", region, ss.Name, err)
				}
				if !slices.Contains(c.Command, "/etc/patroni/patroni.yml") || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == v.Name && m.MountPath == "/etc/patroni"
				}) {
					t.Errorf("%s: %s: patroni.yml is not what the container runs with", region, ss.Name)
				}
				// Patroni as the container's PID 1 reaps the postmaster
				// it orphans; under a shell or another non-reaping init,
				// every switchover waits on a zombie (docs/store-ha.md).
				if len(c.Command) == 0 || c.Command[0] != "patroni" && c.Command[0] != "tini" {
					t.Errorf("%s: %s: command %v: want patroni (or tini) as the container's PID 1", region, ss.Name, c.Command)
				}
			}
			if member == nil || cfg == nil {
				t.Fatalf("%s: %s: want a member ConfigMap (envFrom) and a mounted patroni.yml", region, ss.Name)
			}
			checkPatroniSafety(t, region+": "+ss.Name, cfg)
			etcd3Hosts = cfg.Etcd3.Hosts
			members = append(members, patroniMember{scope: member["PATRONI_SCOPE"], name: member["PATRONI_NAME"], region: region,
				pgAddr: member["PATRONI_POSTGRESQL_CONNECT_ADDRESS"]})
			if member["PATRONI_NAME"] != ss.Name {
				t.Errorf("%s: member name %q, want the StatefulSet's %q", region, member["PATRONI_NAME"], ss.Name)
			}
		}
	}

	// Each cluster: one member in every region, distinct names.
	byScope := map[string][]string{}
	names := map[string]bool{}
	for _, m := range members {
		byScope[m.scope] = append(byScope[m.scope], m.region)
		if names[m.name] {
			t.Errorf("member name %s is used twice", m.name)
		}
		names[m.name] = true
	}
	for _, scope := range regions {
		got := slices.Clone(byScope[scope])
		sort.Strings(got)
		want := slices.Clone(regions)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("store cluster %s has members in %v, want one in each of %v", scope, got, want)
		}
	}
	if len(byScope) != len(regions) {
		t.Errorf("%d store clusters, want one per region %v", len(byScope), regions)
	}

	// Patroni's DCS is the deployment's etcd: the hosts of idemd's
	// etcd.endpoints.
	var want []string
	for _, e := range parseRegionConfig(t, build(t, "k8s/overlays/us-east")).Etcd.Endpoints {
		want = append(want, strings.TrimPrefix(e, "https://"))
	}
	sort.Strings(want)
	got := slices.Clone(etcd3Hosts)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("patroni.yml etcd3.hosts %v, want the deployment's etcd members %v", got, want)
	}
}

// checkPatroniSafety checks the settings of one member's patroni.yml that
// no store cluster may run without.
func checkPatroniSafety(t *testing.T, where string, cfg *patroniConfig) {
	t.Helper()
	d := cfg.Bootstrap.DCS
	if d.SynchronousMode != "quorum" || !d.SynchronousModeStrict {
		t.Errorf("%s: synchronous_mode %v, synchronous_mode_strict %v; want quorum (a commit waits for either other region, so losing one stalls nothing) and strict on", where, d.SynchronousMode, d.SynchronousModeStrict)
	}
	if d.SynchronousNodeCount > 1 {
		t.Errorf("%s: synchronous_node_count %d: a commit would wait for both other regions", where, d.SynchronousNodeCount)
	}
	if d.FailsafeMode {
		t.Errorf("%s: failsafe_mode on: a primary cut from etcd would keep accepting writes", where)
	}
	if !d.PostgreSQL.UsePgRewind {
		t.Errorf("%s: use_pg_rewind off: an old primary could not rejoin", where)
	}
	if v := fmt.Sprint(d.PostgreSQL.Parameters["wal_log_hints"]); v != "on" && v != "true" {
		t.Errorf("%s: wal_log_hints %q: pg_rewind needs it", where, v)
	}
	if cfg.Etcd3 == nil || len(cfg.Etcd3.Hosts) == 0 {
		t.Fatalf("%s: no etcd3 DCS", where)
	}
	if cfg.Etcd != nil || cfg.Kubernetes != nil || cfg.Consul != nil || cfg.Zookeeper != nil || cfg.Exhibitor != nil || cfg.Raft != nil {
		t.Errorf("%s: a DCS besides etcd3 is configured", where)
	}
	if cfg.Etcd3.Protocol != "https" {
		t.Errorf("%s: etcd3 protocol %q, want https", where, cfg.Etcd3.Protocol)
	}
	if !strings.HasPrefix(cfg.Namespace, "/") || cfg.Namespace == "/service/" || cfg.Namespace == "/" {
		t.Errorf("%s: namespace %q: want the deployment's own etcd prefix, not Patroni's default", where, cfg.Namespace)
	}
	for _, tag := range []string{"nofailover", "nosync"} {
		if v, _ := cfg.Tags[tag].(bool); v {
			t.Errorf("%s: tag %s is set: a member's region must be able to hold the primary and the standby", where, tag)
		}
	}
}

// patroniStoreFile is the store block of idemd.yaml for the patroni backend.
const patroniStoreFile = "patroni/idemd-store.yaml"

// TestPatroniStoreBlockReachesEachClustersMembers puts the store block of
// patroni/idemd-store.yaml into each region's idemd.yaml and checks that
// config.Parse accepts it as store.backend: patroni, that there is one
// cluster per region, and that each cluster's DSN is multi-host with
// target_session_attrs=read-write over exactly that cluster's three
// deployed members (their connect addresses), its home member first.
func TestPatroniStoreBlockReachesEachClustersMembers(t *testing.T) {
	addrs := map[string][]string{} // scope -> connect addresses
	rests := map[string][]string{} // scope -> REST base URLs
	home := map[string]string{}
	for _, region := range regions {
		for _, cm := range build(t, "patroni/overlays/"+region).configMaps {
			d := cm.Data
			if d["PATRONI_SCOPE"] == "" {
				continue
			}
			addrs[d["PATRONI_SCOPE"]] = append(addrs[d["PATRONI_SCOPE"]], d["PATRONI_POSTGRESQL_CONNECT_ADDRESS"])
			rests[d["PATRONI_SCOPE"]] = append(rests[d["PATRONI_SCOPE"]], "http://"+d["PATRONI_RESTAPI_CONNECT_ADDRESS"])
			if d["PATRONI_SCOPE"] == region {
				home[region] = d["PATRONI_POSTGRESQL_CONNECT_ADDRESS"]
			}
		}
	}

	b, err := os.ReadFile(patroniStoreFile)
	if err != nil {
		t.Fatal(err)
	}
	var block map[string]any
	if err := yaml.UnmarshalStrict(b, &block); err != nil {
		t.Fatalf("%s: %v", patroniStoreFile, err)
	}
	if len(block) != 1 || block["store"] == nil {
		t.Fatalf("%s: want only a store block", patroniStoreFile)
	}
	for _, region := range regions {
		o := build(t, "k8s/overlays/"+region)
		cm := one(t, "ConfigMap", o.configMaps)
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(cm.Data["idemd.yaml"]), &doc); err != nil {
			t.Fatal(err)
		}
		doc["store"] = block["store"]
		y, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(y)
		if err != nil {
			t.Fatalf("%s: config.Parse rejects idemd.yaml with %s: %v", region, patroniStoreFile, err)
		}
		if cfg.Store.Backend != config.PatroniStoreBackend || cfg.Store.DSN != "" {
			t.Fatalf("%s: backend %q dsn %q, want patroni without a top-level dsn", region, cfg.Store.Backend, cfg.Store.DSN)
		}
		var names []string
		for _, c := range cfg.Store.Patroni.Clusters {
			names = append(names, c.Name)
			u, err := url.Parse(c.DSN)
			if err != nil {
				t.Fatalf("%s: cluster %s: %v", region, c.Name, err)
			}
			if q := u.Query(); q.Get("target_session_attrs") != "read-write" || q.Get("sslmode") != "verify-full" {
				t.Errorf("%s: cluster %s: want target_session_attrs=read-write and sslmode=verify-full, got %v", region, c.Name, q)
			}
			if u.User.Username() == "" {
				t.Errorf("%s: cluster %s: no user", region, c.Name)
			}
			if _, hasPassword := u.User.Password(); hasPassword {
				t.Errorf("%s: cluster %s: a password in the DSN (it comes from PGPASSWORD)", region, c.Name)
			}
			// The hosts as pgx reads them (TLS off here: the CA file
			// exists only in the pod).
			q := u.Query()
			q.Set("sslmode", "disable")
			q.Del("sslrootcert")
			plain := *u
			plain.RawQuery = q.Encode()
			pc, err := pgconn.ParseConfig(plain.String())
			if err != nil {
				t.Fatalf("%s: cluster %s: pgconn: %v", region, c.Name, err)
			}
			hosts := []string{fmt.Sprintf("%s:%d", pc.Host, pc.Port)}
			for _, f := range pc.Fallbacks {
				hosts = append(hosts, fmt.Sprintf("%s:%d", f.Host, f.Port))
			}
			if len(hosts) == 0 || hosts[0] != home[c.Name] {
				t.Errorf("%s: cluster %s: first host %v, want the home member %s", region, c.Name, hosts, home[c.Name])
			}
			got, want := slices.Clone(hosts), slices.Clone(addrs[c.Name])
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) || len(want) != len(regions) {
				t.Errorf("%s: cluster %s: DSN hosts %v, want the cluster's members %v", region, c.Name, got, want)
			}
			// idemctl store status --config asks these.
			gotREST, wantREST := slices.Clone(c.REST), slices.Clone(rests[c.Name])
			sort.Strings(gotREST)
			sort.Strings(wantREST)
			if !slices.Equal(gotREST, wantREST) || len(wantREST) != len(regions) {
				t.Errorf("%s: cluster %s: rest %v, want the cluster's members' REST APIs %v", region, c.Name, gotREST, wantREST)
			}
		}
		if !slices.Equal(names, regions) {
			t.Errorf("%s: clusters %v, want one per region %v", region, names, regions)
		}
	}
}
