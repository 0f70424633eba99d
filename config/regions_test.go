package config

import (
	"errors"
	"testing"
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
