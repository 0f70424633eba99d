package tagbuild

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testRigs are the packages a production binary must not link: the
// embedded etcd server, toxiproxy, the throwaway PostgreSQL and etcd, the
// demo services, the dev cluster and the chaos harness. An entry ending
// in "/" is every package below it; the others are one package each (the
// dev cluster's state file, devcluster/devstate, is idemctl's).
var testRigs = []string{
	"go.etcd.io/etcd/server/",
	"github.com/Shopify/toxiproxy/",
	ModulePath + "/internal/pglocal",
	ModulePath + "/internal/pgtest",
	ModulePath + "/internal/etcdlocal",
	ModulePath + "/internal/etcdtest",
	ModulePath + "/demo/",
	ModulePath + "/devcluster",
	ModulePath + "/chaos/",
}

// deps returns the packages `go list -deps -tags tags pkg` lists.
func deps(t *testing.T, tags, pkg string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(cmd.Args[1:], " "), err)
	}
	return strings.Fields(string(out))
}

// rigs returns the packages of list that are test rigs, but for allowed.
func rigs(list []string, allowed ...string) []string {
	var found []string
	for _, p := range list {
		if slices.Contains(allowed, p) {
			continue
		}
		for _, r := range testRigs {
			if p == r || (strings.HasSuffix(r, "/") && strings.HasPrefix(p, r)) {
				found = append(found, p)
				break
			}
		}
	}
	return found
}

// TestProductionBuildsLinkNoTestRig: idemd and idemctl as built for
// deployment (no tags, as deploy/Dockerfile builds them) link none of the
// test rigs, and the drill build of idemd links only the unsafe modes'
// small package of the chaos harness. The dev build of idemd and the
// drill build of idemctl do link them, so the check sees the difference.
func TestProductionBuildsLinkNoTestRig(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	tests := []struct {
		tags, pkg string
		allowed   []string
	}{
		{"", "./cmd/idemd", nil},
		{"", "./cmd/idemctl", nil},
		{"drill", "./cmd/idemd", []string{ModulePath + "/chaos/unsafemode"}},
	}
	for _, tt := range tests {
		if found := rigs(deps(t, tt.tags, tt.pkg), tt.allowed...); len(found) > 0 {
			t.Errorf("go list -deps -tags %q %s links test rigs: %s", tt.tags, tt.pkg, strings.Join(found, " "))
		}
	}
	for _, tt := range []struct{ tags, pkg, rig string }{
		{"dev", "./cmd/idemd", ModulePath + "/devcluster"},
		{"drill", "./cmd/idemctl", "github.com/Shopify/toxiproxy/v2"},
	} {
		if !slices.Contains(deps(t, tt.tags, tt.pkg), tt.rig) {
			t.Errorf("go list -deps -tags %s %s lacks %s: the check would not see a rig", tt.tags, tt.pkg, tt.rig)
		}
	}
}

// TestTheGatewayDependsOnTheStoreContractNotABackend: the gateway and the
// store contract with its conformance suite (store/...) link no store
// backend, so a new backend needs no edit in them (docs/store.md).
func TestTheGatewayDependsOnTheStoreContractNotABackend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"./gateway", "./store/..."} {
		list := deps(t, "", pkg)
		if slices.Contains(list, ModulePath+"/sqlstore") {
			t.Errorf("go list -deps %s links %s/sqlstore: it must use the store contract's types", pkg, ModulePath)
		}
		if !slices.Contains(list, ModulePath+"/store") {
			t.Errorf("go list -deps %s lacks %s/store: the check would not see the contract", pkg, ModulePath)
		}
	}
}

// TestTheConfigurationAndThePolicyVocabularyLinkNoEtcd: config, the
// failover policy leaf and the drills' scenarios validate a failover
// policy without linking etcd (the vocabulary is failover/policy, not
// failover), so a tool that only reads a configuration stays small. The
// failover controller does link etcd, so the check sees it.
func TestTheConfigurationAndThePolicyVocabularyLinkNoEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	etcd := func(list []string) []string {
		var found []string
		for _, p := range list {
			if strings.HasPrefix(p, "go.etcd.io/") {
				found = append(found, p)
			}
		}
		return found
	}
	for _, pkg := range []string{"./config", "./failover/policy", "./chaos/scenario"} {
		if found := etcd(deps(t, "", pkg)); len(found) > 0 {
			t.Errorf("go list -deps %s links %d etcd packages: %s", pkg, len(found), strings.Join(found, " "))
		}
	}
	if len(etcd(deps(t, "", "./failover"))) == 0 {
		t.Errorf("go list -deps ./failover links no etcd: the check would not see it")
	}
}
