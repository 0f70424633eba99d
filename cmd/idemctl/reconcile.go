package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// reconciledSnapshot builds the answer `op reconcile --ran` stores, as the
// gateway builds one from an upstream answer: the endpoint's allow-listed
// headers only (--header "Name: value"), a Content-Type that matches the
// endpoint's declared body type (application/json for a JSON endpoint
// unless --header gives another JSON type; required with a body
// otherwise), a JSON body that parses, a body within the endpoint's
// max_response_bytes, and the resource id from Location. Every problem
// names its flag.
func reconciledSnapshot(ep config.Endpoint, status int, body string, headers []string) (store.Snapshot, error) {
	p := ep.Policy()
	s := store.Snapshot{Status: status, Header: http.Header{}, Body: []byte(body)}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return store.Snapshot{}, fmt.Errorf("--header %q: want \"Name: value\"", h)
		}
		if !p.KeepHeader(name) {
			return store.Snapshot{}, fmt.Errorf("--header %s: endpoint %s replays only %s (its response_headers)",
				name, ep.Name, strings.Join(p.ResponseHeaders, ", "))
		}
		s.Header.Add(http.CanonicalHeaderKey(name), value)
	}
	ct := s.Header.Get("Content-Type")
	switch {
	case ep.Secrets.Enabled() && body != "":
		return store.Snapshot{}, fmt.Errorf("--body: endpoint %s seals secret response fields (its secrets section); "+
			"a reconciled body cannot be sealed by idemctl: reconcile with --status and no --body, or --not-run", ep.Name)
	case body == "":
	case ep.DeclaredBody() == config.BodyJSON && ct == "":
		if !p.KeepHeader("Content-Type") {
			return store.Snapshot{}, fmt.Errorf("--body: endpoint %s does not replay Content-Type (its response_headers): "+
				"a replayed body would have no media type", ep.Name)
		}
		s.Header.Set("Content-Type", "application/json")
		ct = "application/json"
	case ct == "":
		return store.Snapshot{}, fmt.Errorf("--body: endpoint %s takes %s bodies: give the answer's media type with --header \"Content-Type: TYPE\"",
			ep.Name, ep.DeclaredBody())
	}
	if ep.DeclaredBody() == config.BodyJSON && ct != "" && !idempotency.IsJSONMediaType(ct) {
		return store.Snapshot{}, fmt.Errorf("--header Content-Type %q: endpoint %s is a JSON endpoint; want application/json or a +json type", ct, ep.Name)
	}
	if body != "" && idempotency.IsJSONMediaType(ct) && !json.Valid(s.Body) {
		var v any
		err := json.Unmarshal(s.Body, &v)
		return store.Snapshot{}, fmt.Errorf("--body: not valid JSON (Content-Type %s): %v", ct, err)
	}
	if int64(len(s.Body)) > p.MaxResponseBytes {
		return store.Snapshot{}, fmt.Errorf("--body: %d bytes, over endpoint %s's max_response_bytes (%d)", len(s.Body), ep.Name, p.MaxResponseBytes)
	}
	if loc := s.Header.Get("Location"); loc != "" {
		s.ResourceID = path.Base(loc)
	}
	return s, nil
}

// endpointOf returns the named endpoint of the deployment's configuration
// (--config, or the dev cluster's).
func (f *connFlags) endpointOf(name string) (config.Endpoint, error) {
	_, cfg, err := f.topology()
	if err != nil {
		return config.Endpoint{}, fmt.Errorf("--ran builds the answer from the endpoint's declaration: %w", err)
	}
	for _, ep := range cfg.Endpoints {
		if ep.Name == name {
			return ep, nil
		}
	}
	return config.Endpoint{}, fmt.Errorf("the operation's endpoint %q is not in the configuration (%s)", name, f.config)
}

// endpointNames lists the endpoints of the deployment's configuration
// (--config, or the dev cluster's), or none when there is no
// configuration to read (a bare --dsn).
func (f *connFlags) endpointNames() []string {
	_, cfg, err := f.topology()
	if err != nil {
		return nil
	}
	names := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		names[i] = ep.Name
	}
	return names
}
