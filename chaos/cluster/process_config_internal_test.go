package cluster

import (
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
)

// TestTheDrillEndpointWaitsForItsRunInFlightWhenTheEntryResendsIt: a
// region's drill configuration parses, and its endpoint holds a retry
// that finds the run still in flight for the global entry's answer slack
// (in_progress.wait), so the entry's re-send of a slow first attempt gets
// that run's answer, not a 409.
func TestTheDrillEndpointWaitsForItsRunInFlightWhenTheEntryResendsIt(t *testing.T) {
	f := regionFile{Region: "us-east", Listen: "127.0.0.1:1", Upstream: "http://127.0.0.1:2",
		DSN: "postgres://postgres@127.0.0.1:3/postgres", SecretFile: "/dev/null", Policy: "transfer",
		Etcd:  []string{"http://127.0.0.1:4"},
		Peers: []peer{{Name: "us-east", URL: "http://127.0.0.1:1"}, {Name: "eu-west", URL: "http://127.0.0.1:5"}},
		Lease: 3 * time.Second, UpstreamTimeout: 1500 * time.Millisecond}
	cfg, err := config.Parse(f.render())
	if err != nil {
		t.Fatalf("the drill's region configuration: %v\n%s", err, f.render())
	}
	if len(cfg.Endpoints) != 1 || cfg.Endpoints[0].InProgress.Wait != 2*time.Second {
		t.Fatalf("endpoints %+v: want create-payment with in_progress.wait 2s", cfg.Endpoints)
	}
}
