package region

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/config"
)

func three() []config.Region {
	return []config.Region{
		{Name: "us-east", URL: "http://a"},
		{Name: "eu-west", URL: "http://b", Successors: []string{"us-east"}},
		{Name: "ap-south", URL: "http://c"},
	}
}

func TestHomeIsShardModuloRegionsInConfigOrder(t *testing.T) {
	top, err := New("eu-west", three())
	if err != nil {
		t.Fatal(err)
	}
	for shard, want := range []string{"us-east", "eu-west", "ap-south", "us-east", "eu-west"} {
		if got := top.Home(shard); got != want {
			t.Errorf("Home(%d) = %q, want %q", shard, got, want)
		}
	}
	if got := top.Home(1023); got != "us-east" { // 1023 % 3 == 0
		t.Errorf("Home(1023) = %q", got)
	}
}

func TestSuccessorsPutConfiguredOrderFirstThenWrapAround(t *testing.T) {
	top, err := New("us-east", three())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"us-east":  {"eu-west", "ap-south"},
		"eu-west":  {"us-east", "ap-south"},
		"ap-south": {"us-east", "eu-west"},
	} {
		got, err := top.Successors(name)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Successors(%s) (-want +got):\n%s", name, d)
		}
	}
	healthy := func(r string) bool { return r != "us-east" }
	if got := top.Failover("eu-west", healthy); got != "ap-south" {
		t.Errorf("Failover(eu-west) skipping us-east = %q, want ap-south", got)
	}
}

func TestNewRefusesInconsistentTopology(t *testing.T) {
	bad := three()
	bad[2].Successors = []string{"mars"}
	if _, err := New("us-east", bad); !errors.Is(err, ErrUnknownRegion) {
		t.Errorf("unknown successor: err = %v", err)
	}
	if _, err := New("mars", three()); !errors.Is(err, ErrUnknownRegion) {
		t.Errorf("local region missing: err = %v", err)
	}
}

func TestSingleRegionModeOwnsEverything(t *testing.T) {
	top, err := FromConfig(&config.Config{Region: "solo", Listen: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if top.Home(7) != "solo" || top.Failover("solo", nil) != "" {
		t.Fatalf("single region: Home=%q Failover=%q", top.Home(7), top.Failover("solo", nil))
	}
}
