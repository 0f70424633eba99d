package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// threeRegions is minimal with three regions, for the patroni backend's
// map from home regions to clusters.
const threeRegions = `regions:
  - {name: us-east, url: "http://127.0.0.1:7101"}
  - {name: eu-west, url: "http://127.0.0.1:7102"}
  - {name: ap-south, url: "http://127.0.0.1:7103"}
`

// patroniStore replaces minimal's store section.
func patroniStore(store string) string {
	return strings.Replace(minimal, `store: {dsn: "postgres://idemd@localhost/idemcoord"}`, store, 1) + threeRegions
}

// TestThePatroniStoreExampleValidates: one cluster per region by name, a
// region spread over two clusters by explicit shard ranges.
func TestThePatroniStoreExampleValidates(t *testing.T) {
	c := mustParse(t, patroniStore(`store:
  backend: patroni
  patroni:
    audit_cluster: us-east
    clusters:
      - {name: us-east, dsn: "postgres://idemd@a1,a2,a3/idemcoord?target_session_attrs=read-write"}
      - {name: eu-west, dsn: "postgres://idemd@b1,b2,b3/idemcoord?target_session_attrs=read-write"}
      - {name: ap-south, dsn: "postgres://idemd@c1,c2,c3/idemcoord?target_session_attrs=read-write"}
      - {name: ap-south-2, dsn: "postgres://idemd@d1,d2,d3/idemcoord?target_session_attrs=read-write", shards: ["512-1023"]}
`))
	if c.Store.Backend != PatroniStoreBackend || len(c.Store.Patroni.Clusters) != 4 {
		t.Fatalf("store = %+v", c.Store)
	}
}

// TestStoreBackendErrorsNameTheFieldAndWhy: each mistake in the store's
// backend section is reported at its YAML path.
func TestStoreBackendErrorsNameTheFieldAndWhy(t *testing.T) {
	for _, c := range []struct {
		name, store string
		want        []string
	}{
		{"postgres without a dsn", `store: {backend: postgres}`, []string{"store.dsn"}},
		{"a bad backend name", `store: {backend: "Postgres!", dsn: x}`, []string{"store.backend"}},
		{"patroni without clusters", `store: {backend: patroni}`, []string{"store.patroni"}},
		{"patroni with a dsn", `store: {backend: patroni, dsn: x, patroni: {clusters: [{name: us-east, dsn: a, regions: [us-east, eu-west, ap-south]}]}}`,
			[]string{"store.dsn"}},
		{"clusters for postgres", `store: {dsn: x, patroni: {clusters: [{name: us-east, dsn: a}]}}`, []string{"store.patroni"}},
		{"a cluster without a dsn, a duplicate name, an unknown region", `store:
  backend: patroni
  patroni:
    clusters:
      - {name: us-east, regions: [us-east, eu-west, ap-south]}
      - {name: us-east, dsn: b, regions: [mars]}
`, []string{"store.patroni.clusters[0].dsn", "store.patroni.clusters[1].name", "store.patroni.clusters[1].regions[0]"}},
		{"a region held twice, overlapping and bad ranges, an unknown audit cluster", `store:
  backend: patroni
  patroni:
    audit_cluster: nowhere
    clusters:
      - {name: a, dsn: a, regions: [us-east, eu-west, ap-south]}
      - {name: b, dsn: b, regions: [us-east]}
      - {name: c, dsn: c, shards: ["0-10", "9-3"]}
      - {name: d, dsn: d, shards: ["5", "2000"]}
`, []string{"store.patroni.clusters[1].regions[0]", "store.patroni.clusters[2].shards[1]",
			"store.patroni.clusters[3].shards[0]", "store.patroni.clusters[3].shards[1]", "store.patroni.audit_cluster"}},
		{"bad Patroni REST URLs", `store:
  backend: patroni
  patroni:
    clusters:
      - {name: us-east, dsn: a, regions: [us-east, eu-west, ap-south], rest: ["10.0.0.1:8008", "ftp://h:8008", "http://h:8008/cluster", "http://h:8008", "http://h:8008", "http://:8008"]}
`, []string{"store.patroni.clusters[0].rest[0]", "store.patroni.clusters[0].rest[1]", "store.patroni.clusters[0].rest[2]",
			"store.patroni.clusters[0].rest[4]", "store.patroni.clusters[0].rest[5]"}},
		{"a region without a cluster", `store:
  backend: patroni
  patroni:
    clusters:
      - {name: us-east, dsn: a}
      - {name: eu-west, dsn: b}
`, []string{"store.patroni.clusters"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(patroniStore(c.store)))
			if err == nil {
				err = cfg.Validate()
			}
			got := paths(fieldErrors(t, err))
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("no error at %s; got %v (%v)", w, got, err)
				}
			}
		})
	}
}

// TestTheDocsPatroniExampleValidates: docs/store.md's patroni example,
// copied into a three-region file, validates as it stands.
func TestTheDocsPatroniExampleValidates(t *testing.T) {
	doc, err := os.ReadFile("../docs/store.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(doc), "store:\n  backend: patroni\n")
	if start < 0 {
		t.Fatal("docs/store.md has no patroni example")
	}
	end := strings.Index(string(doc)[start:], "```")
	c := mustParse(t, patroniStore(string(doc)[start:start+end]))
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Store.Patroni.Clusters); n != 4 {
		t.Fatalf("%d clusters, want 4", n)
	}
}
