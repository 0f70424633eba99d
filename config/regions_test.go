package config

import (
	"errors"
	"testing"
	"time"
)

func TestRegionsListErrorsNameTheFieldAndWhy(t *testing.T) {
	c := mustParse(t, minimal)
	c.Regions = []Region{
		{Name: "us-east", URL: "http://a:1"},
		{Name: "eu-west"},
		{Name: "us-east", URL: "http://c:1", Successors: []string{"mars"}},
	}
	c.Region = "ap-south"
	c.Shards = 0
	err := c.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want *ValidationError", err)
	}
	want := map[string]bool{"regions[1].url": false, "regions[2].name": false,
		"regions[2].successors[0]": false, "regions": false, "shards": false}
	for _, fe := range ve.Errors {
		if _, ok := want[fe.Path]; ok {
			want[fe.Path] = true
		}
	}
	for path, seen := range want {
		if !seen {
			t.Errorf("no error for %s in:\n%v", path, err)
		}
	}
}

func TestRegionsDefaultToSingleRegionForwarding(t *testing.T) {
	c := mustParse(t, minimal)
	if len(c.Regions) != 0 || c.Shards != 1024 || c.Routing != RoutingForward {
		t.Fatalf("defaults: regions=%v shards=%d routing=%q", c.Regions, c.Shards, c.Routing)
	}
	three := minimal + `regions:
  - {name: us-east, url: "http://127.0.0.1:7101"}
  - {name: eu-west, url: "http://127.0.0.1:7102", successors: [us-east]}
  - {name: ap-south, url: "http://127.0.0.1:7103"}
routing: redirect
`
	c = mustParse(t, three)
	if len(c.Regions) != 3 || c.Routing != RoutingRedirect {
		t.Fatalf("parsed regions=%v routing=%q", c.Regions, c.Routing)
	}
}

// TestEtcdTimingsTuneFailureDetection: etcd.liveness_ttl, election_ttl
// and confirm_delay parse (a drill shortens them so a failover fits its
// fault window), and a TTL etcd would refuse or round is an error naming
// the field.
func TestEtcdTimingsTuneFailureDetection(t *testing.T) {
	c := mustParse(t, minimal+"etcd: {endpoints: [\"http://127.0.0.1:2379\"], liveness_ttl: 3s, election_ttl: 2s, confirm_delay: 500ms, down_probe: \"off\"}\n")
	if c.Etcd.LivenessTTL != 3*time.Second || c.Etcd.ElectionTTL != 2*time.Second || c.Etcd.ConfirmDelay != 500*time.Millisecond || c.Etcd.DownProbe != DownProbeOff {
		t.Fatalf("parsed etcd timings %+v", c.Etcd)
	}
	tests := []struct {
		name string
		etcd Etcd
		path string
	}{
		{"liveness below etcd's minimum", Etcd{LivenessTTL: time.Second}, "etcd.liveness_ttl"},
		{"liveness not whole seconds", Etcd{LivenessTTL: 2500 * time.Millisecond}, "etcd.liveness_ttl"},
		{"election below etcd's minimum", Etcd{ElectionTTL: 1500 * time.Millisecond}, "etcd.election_ttl"},
		{"negative confirm delay", Etcd{ConfirmDelay: -time.Second}, "etcd.confirm_delay"},
		{"unknown down probe", Etcd{DownProbe: "tcp"}, "etcd.down_probe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, minimal)
			tt.etcd.DialTimeout = time.Second
			c.Etcd = tt.etcd
			var ve *ValidationError
			if err := c.Validate(); !errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Path != tt.path {
				t.Errorf("Validate(%+v) = %v, want one error at %s", tt.etcd, err, tt.path)
			}
		})
	}
}
