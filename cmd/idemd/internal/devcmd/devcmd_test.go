package devcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/devcluster"
)

// TestDevPrintsWhereEverythingIs: a new user of `idemd dev` is told the
// store's DSN (without a password), the data directories and each
// region's config file, the regions list for the SDK and the global
// entry's address, and given a first request that is fingerprinted as
// JSON.
func TestDevPrintsWhereEverythingIs(t *testing.T) {
	st := devcluster.State{PortBase: 7101,
		Regions:     map[string]string{"us-east": "http://127.0.0.1:7101", "eu-west": "http://127.0.0.1:7102", "ap-south": "http://127.0.0.1:7103"},
		PaymentsURL: "http://127.0.0.1:7201", BankURL: "http://127.0.0.1:7202", EntryURL: "http://127.0.0.1:7204",
		DSN:     "postgres://app:hunter2@db.example:5432/idem",
		DataDir: "/tmp/idemdev123", PostgresDir: "/tmp/idpg456",
		Configs:    map[string]string{"us-east": "/tmp/idemdev123/us-east.yaml", "eu-west": "/tmp/idemdev123/eu-west.yaml", "ap-south": "/tmp/idemdev123/ap-south.yaml"},
		ControlURL: "http://127.0.0.1:7203", Demo: devcluster.ActorOwner{Actor: "demo/demo", Shard: 9, Owner: "eu-west", Epoch: 1, State: "ACTIVE"}}
	var out bytes.Buffer
	printCluster(&out, st, "/tmp/idemcoord-dev-0/cluster-7101.json", "TOKEN")
	for _, want := range []string{"postgres://app:xxxxx@db.example:5432/idem", "/tmp/idemdev123", "/tmp/idpg456",
		"/tmp/idemdev123/us-east.yaml", "/tmp/idemdev123/eu-west.yaml", "/tmp/idemdev123/ap-south.yaml",
		"cluster-7101.json", "--json '{",
		"IDEMCOORD_REGIONS=us-east=http://127.0.0.1:7101,eu-west=http://127.0.0.1:7102,ap-south=http://127.0.0.1:7103",
		"global entry (HAProxy)  http://127.0.0.1:7204",
		"POST /v1/payments is failover: reject", "POST /v1/transfers is\nfailover: transfer", "http://127.0.0.1:7101/v1/transfers",
		// The failover to watch is of the region that owns the demo actor.
		"stop the region that owns actor demo (eu-west)", "curl -X POST http://127.0.0.1:7203/regions/eu-west/stop",
		"failback eu-west", "http://127.0.0.1:7203/regions/eu-west/kill", "op list --region eu-west"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "hunter2") || strings.Contains(out.String(), " -d '") {
		t.Errorf("output shows the password or a form-encoded curl:\n%s", out.String())
	}
}
