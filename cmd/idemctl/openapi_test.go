package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/devcluster/devstate"
)

// openapiConfig is the README's example plus a shadow endpoint, a
// multipart upload, a limit, a wait and a complete endpoint with a
// downstream window.
const openapiConfig = `
  - name: upload-doc
    method: PUT
    path: /v1/docs/{doc_id}/files/{file}
    body: multipart
    key: optional
    limit: {rate: 10/s}
  - name: watch-thing
    method: POST
    path: /v1/watch
    mode: shadow
  - name: place-order
    method: POST
    path: /v1/payments/{payment_id}/capture/orders
    resolve_path: /internal/operations/{operation_id}
    on_retry: complete
    in_progress: {wait: 2s}
    downstream_window: 24h
  - name: refund
    method: POST
    path: /v1/refunds
    ttl: 720h
    replay_ttl: 48h
  - name: create-thing
    method: POST
    path: /v1/things
    replay: {mode: reference, resource_path: "/v1/things/{resource_id}"}
`

func runOpenAPI(t *testing.T, format string) []byte {
	t.Helper()
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	path := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(path, []byte(config.Example+openapiConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"openapi", "--config", path, "--output", format})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestOpenAPIFragmentValidatesAndDescribesEveryEndpoint: idemctl openapi
// prints an OpenAPI 3.1 document that a real OpenAPI validator
// (kin-openapi, by its 3.1 rules) accepts,
// in YAML and in JSON, with one operation per coordinated endpoint, whose
// Idempotency-Key is required as configured, whose retention and problem
// answers are stated, and whose answers carry Idempotency-Status.
func TestOpenAPIFragmentValidatesAndDescribesEveryEndpoint(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	cfg, err := config.Parse([]byte(config.Example + openapiConfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			out := runOpenAPI(t, format)
			if format == "json" && !json.Valid(out) {
				t.Fatalf("--output json is not JSON:\n%s", out)
			}
			loader := openapi3.NewLoader()
			doc, err := loader.LoadFromData(out)
			if err != nil {
				t.Fatalf("loading: %v\n%s", err, out)
			}
			if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
				t.Fatalf("openapi: %q, want 3.1.0", doc.OpenAPI)
			}
			// kin-openapi validates a 3.1 document by the 3.1 rules (JSON
			// Schema 2020-12) once the version says 3.1.
			if err := doc.Validate(context.Background()); err != nil {
				t.Fatalf("the document does not validate as OpenAPI 3.1: %v\n%s", err, out)
			}
			for _, ep := range cfg.Endpoints {
				item := doc.Paths.Find(ep.Path)
				if item == nil {
					t.Errorf("%s: no path %s", ep.Name, ep.Path)
					continue
				}
				op := item.GetOperation(ep.Method)
				if op == nil {
					t.Errorf("%s: no %s operation", ep.Name, ep.Method)
					continue
				}
				key := op.Parameters.GetByInAndName("header", "Idempotency-Key")
				wantRequired := ep.Key != config.KeyOptional && !ep.Shadow()
				if key == nil || key.Required != wantRequired {
					t.Errorf("%s: Idempotency-Key %+v, want required=%v", ep.Name, key, wantRequired)
				} else if ttl := config.FormatDuration(ep.Policy().TTL); !strings.Contains(key.Description, ttl) {
					t.Errorf("%s: the key's description does not state its retention %s: %q", ep.Name, ttl, key.Description)
				}
				for _, status := range []string{"default", "409", "422", "503"} {
					r := op.Responses.Value(status)
					if r == nil || r.Value.Headers["Idempotency-Status"] == nil {
						t.Errorf("%s: answer %s lacks Idempotency-Status", ep.Name, status)
					}
				}
				if p := op.Responses.Value("422"); p == nil || p.Value.Content.Get("application/problem+json") == nil {
					t.Errorf("%s: 422 is not a problem document", ep.Name)
				}
				gone := op.Responses.Value("410")
				switch rt := ep.Policy().ReplayTTL; {
				case ep.Replay.Reference():
					if gone == nil || !strings.Contains(*gone.Value.Description, "resource-gone") {
						t.Errorf("%s: a reference endpoint does not list 410 resource-gone: %+v", ep.Name, gone)
					}
				case rt > 0:
					if gone == nil || !strings.Contains(*gone.Value.Description, "replay-expired") || !strings.Contains(*gone.Value.Description, config.FormatDuration(rt)) {
						t.Errorf("%s: an endpoint with replay_ttl %s does not list 410 replay-expired with it: %+v", ep.Name, rt, gone)
					}
				default:
					if gone != nil {
						t.Errorf("%s: 410 listed on an endpoint that never answers it: %s", ep.Name, *gone.Value.Description)
					}
				}
				conflict := *op.Responses.Value("409").Value.Description
				if windowed := ep.DownstreamWindow > 0; windowed != strings.Contains(conflict, "downstream-window-passed") ||
					windowed && !strings.Contains(conflict, config.FormatDuration(ep.DownstreamWindow)) {
					t.Errorf("%s: downstream_window %s, 409 says %q", ep.Name, ep.DownstreamWindow, conflict)
				}
				if x, ok := op.Extensions["x-idempotency"].(map[string]any); !ok || x["endpoint"] != ep.Name {
					t.Errorf("%s: x-idempotency %v", ep.Name, op.Extensions["x-idempotency"])
				}
			}
			if cm := doc.Components.Schemas["Problem"].Value.Properties["changed_members"]; cm == nil ||
				!strings.Contains(cm.Value.Description, "RFC 6901") || !strings.Contains(cm.Value.Description, "at most 32") {
				t.Errorf("Problem.changed_members %+v, want the 422's changed members with their bounds", cm)
			}
			enum := doc.Components.Schemas["Problem"].Value.Properties["type"].Value.Enum
			if len(enum) == 0 || !contains(enum, "https://idemcoord.dev/problems/first-sent-expired") {
				t.Errorf("Problem.type enum %v lacks the problem types", enum)
			}
		})
	}
}

func contains(vs []any, want string) bool {
	for _, v := range vs {
		if v == want {
			return true
		}
	}
	return false
}

// TestOpenAPIReadsTheDevClusterThePortBaseNames: without --config,
// idemctl openapi reads the configuration of the dev cluster --port-base
// names, like every other command, and says how to point it at one when
// that cluster is not running.
func TestOpenAPIReadsTheDevClusterThePortBaseNames(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("IDEMCOORD_CONFIG", "")
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	for base, extra := range map[int]string{7000: "", 7100: openapiConfig} {
		path := filepath.Join(t.TempDir(), "idemd.yaml")
		if err := os.WriteFile(path, []byte(config.Example+extra), 0o600); err != nil {
			t.Fatal(err)
		}
		st := devcluster.State{PortBase: base, PID: os.Getpid(), Configs: map[string]string{devstate.Regions[0]: path}}
		if err := devcluster.WriteState(devcluster.StatePath(base), st); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := rootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("openapi", "--port-base", "7100")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "/v1/refunds:") {
		t.Errorf("--port-base 7100: the document lacks that cluster's endpoint /v1/refunds:\n%s", out)
	}
	out, err = run("openapi", "--port-base", "7000")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "/v1/refunds:") {
		t.Errorf("--port-base 7000 printed the other cluster's endpoints:\n%s", out)
	}
	if _, err := run("openapi"); err == nil || !strings.Contains(err.Error(), "--port-base") {
		t.Errorf("two clusters running, no --port-base: %v, want an error asking for --port-base", err)
	}
	if _, err := run("openapi", "--port-base", "7200"); err == nil || !strings.Contains(err.Error(), "--config not set") {
		t.Errorf("--port-base of no cluster: %v, want an error naming --config", err)
	}
}
