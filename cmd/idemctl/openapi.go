package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/devcluster/devstate"
)

// problemTypes are the problem types (docs/http-contract.md) a coordinated
// endpoint may answer, after https://idemcoord.dev/problems/.
var problemTypes = []string{"invalid-key", "missing-key", "unauthorized", "body-too-large", "malformed-body",
	"unsupported-media-type", "overloaded", "fingerprint-mismatch", "in-progress", "outcome-unknown",
	"upstream-unavailable", "upstream-invalid-answer", "store-unavailable", "ownership-moving", "ownership-unknown",
	"misrouted", "region-unreachable", "forward-answer-lost", "region-unavailable", "region-failover", "shutting-down", "not-found",
	"rate-limited", "secret-unavailable", "resource-gone", "operation-cancelled", "not-cancellable",
	"cancel-undetermined", "invalid-parameter", "first-sent-expired", "first-sent-in-future", "invalid-first-sent",
	"replay-expired", "downstream-window-passed"}

// openapiVersion is the OpenAPI version `idemctl openapi` writes: 3.1,
// whose schemas are JSON Schema 2020-12.
const openapiVersion = "3.1.0"

// keyStatuses are the values of Idempotency-Status.
var keyStatuses = []string{"created", "replayed", "in-progress", "conflict", "ignored", "rejected"}

func openapiCmd() *cobra.Command {
	var path, format string
	cmd := &cobra.Command{
		Use:   "openapi [--config FILE]",
		Short: "Print the idempotency contract of every coordinated endpoint as an OpenAPI 3.1 document",
		Long: `openapi reads an idemd configuration and prints, for every coordinated
endpoint (method and path), what idemcoord adds to the upstream's API: the
Idempotency-Key header (required or not, its forms and retention), the
Idempotency-First-Sent header, the answers the gateway gives itself as
problem documents, and the Idempotency-Status, Idempotent-Replayed,
Idempotency-Key-Expires and X-Idempotency-Operation-Id headers; the
endpoint's settings are under x-idempotency. It is a complete OpenAPI 3.1
document (YAML, or JSON with --output json) to merge into the upstream's
own description. Without --config it reads the running dev cluster's
configuration (the one --port-base names). It connects to nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			cfg, err := loadOpenAPIConfig(path)
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(openapiDoc(cfg), "", "  ")
			if err != nil {
				return err
			}
			if format == outputTable { // people read YAML
				if b, err = yaml.JSONToYAML(b); err != nil {
					return err
				}
			} else {
				b = append(b, '\n')
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&path, "config", os.Getenv("IDEMCOORD_CONFIG"),
		"idemd configuration file (default $IDEMCOORD_CONFIG, else the running dev cluster's)")
	addOutputFlag(cmd, &format)
	cmd.Flags().Lookup("output").Usage = "output format: table (the document as YAML) or json"
	return cmd
}

// loadOpenAPIConfig loads path, or without one the configuration of the dev
// cluster --port-base names (its regions share the endpoints).
func loadOpenAPIConfig(path string) (*config.Config, error) {
	if path == "" {
		st, err := devState()
		if err != nil {
			return nil, fmt.Errorf("--config not set and %w", err)
		}
		path = st.Configs[devstate.Regions[0]]
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, configError(path, err)
	}
	return cfg, nil
}

type obj = map[string]any

var pathParamRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// openapiDoc builds the document for cfg's endpoints.
func openapiDoc(cfg *config.Config) obj {
	paths := obj{}
	for _, ep := range cfg.Endpoints {
		item, _ := paths[ep.Path].(obj)
		if item == nil {
			item = obj{}
			paths[ep.Path] = item
		}
		item[strings.ToLower(ep.Method)] = operationOf(ep)
	}
	return obj{
		"openapi": openapiVersion,
		"info": obj{"title": "idemcoord idempotency contract", "version": "1",
			"description": "What the idemcoord gateway adds to each coordinated endpoint (docs/http-contract.md)."},
		"paths":      paths,
		"components": components(),
	}
}

// operationOf is one endpoint's operation object.
func operationOf(ep config.Endpoint) obj {
	required := ep.Key != config.KeyOptional && !ep.Shadow()
	ttl := ep.Policy().TTL
	params := []any{
		obj{"name": "Idempotency-Key", "in": "header", "required": required,
			"description": fmt.Sprintf("The intent's key: an RFC 8941 sf-string (\"abc\") or a bare token (abc), 1-255 visible ASCII characters, scoped to the caller and endpoint. Honoured for at least %s after the record's last change (Idempotency-Key-Expires says until when).%s",
				config.FormatDuration(ttl), keyNote(ep)),
			"schema": obj{"type": "string", "minLength": 1}},
		obj{"name": "Idempotency-First-Sent", "in": "header", "required": false,
			"description": fmt.Sprintf("When the intent was first sent (HTTP-date), unchanged on every retry. Older than the ttl (%s) less the clock skew tolerated (a minute; half the ttl under two minutes), or further ahead than that skew: 412, nothing runs. Another value under the same key: 422.", config.FormatDuration(ttl)),
			"schema":      obj{"type": "string"}},
	}
	for _, m := range pathParamRE.FindAllStringSubmatch(ep.Path, -1) {
		params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": "string"}})
	}
	responses := obj{
		"default": obj{"description": "The upstream's answer (first run), or its recorded answer replayed (Idempotent-Replayed: true).",
			"headers": statusHeaders(true)},
		"400": problemRef("Invalid or missing Idempotency-Key, malformed body, invalid Idempotency-First-Sent; nothing ran."),
		"409": problemRef("The key's operation is in progress (Retry-After)" + waitNote(ep) + ", or its outcome is unknown" +
			windowNote(ep) + "."),
		"412": problemRef("Idempotency-First-Sent outside the key's retention window; nothing ran."),
		"422": problemRef("The key was used with another request; nothing ran. changed_members names what of the body changed (JSON pointers, form part names or \"body\"), never values."),
		"503": problemRef("Nothing was executed (store or owner region unavailable, overloaded); retry with the same key."),
	}
	if gone := goneNote(ep); gone != "" {
		responses["410"] = problemRef(gone)
	}
	if ep.Limit.Enabled() {
		responses["429"] = problemRef("Replays and in-progress answers over the per-actor limit (" + ep.Limit.Rate + ").")
	}
	if ep.Async {
		responses["202"] = obj{"description": "Accepted; a retry with the key gets the same operation.",
			"headers": mergeHeaders(statusHeaders(false), obj{"Location": obj{"description": "/v1/operations/{id}",
				"schema": obj{"type": "string"}}}),
			"content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}
	}
	op := obj{
		"operationId": ep.Name,
		"summary":     fmt.Sprintf("%s %s (idemcoord endpoint %s)", ep.Method, ep.Path, ep.Name),
		"parameters":  params,
		"responses":   responses,
		"x-idempotency": obj{"endpoint": ep.Name, "key": keyMode(ep), "ttl": ttl.String(),
			"ttl_seconds": int64(ttl.Seconds()), "lease": ep.Policy().Lease.String(), "mode": modeOf(ep),
			"async": ep.Async, "on_retry": onRetryOf(ep), "in_progress_wait": ep.InProgress.Wait.String(),
			"replay": replayOf(ep)},
	}
	if w := ep.DownstreamWindow; w > 0 {
		op["x-idempotency"].(obj)["downstream_window"] = w.String()
		op["x-idempotency"].(obj)["downstream_window_seconds"] = int64(w.Seconds())
	}
	if rt := ep.Policy().ReplayTTL; rt > 0 {
		op["x-idempotency"].(obj)["replay_ttl"] = rt.String()
		op["x-idempotency"].(obj)["replay_ttl_seconds"] = int64(rt.Seconds())
	}
	if mt := bodyMediaType(ep); mt != "" {
		op["requestBody"] = obj{"required": false, "content": obj{mt: obj{"schema": obj{}}}}
	}
	return op
}

// windowNote describes the endpoint's 409 downstream-window-passed, or is
// empty when it has no downstream_window.
func windowNote(ep config.Endpoint) string {
	if ep.DownstreamWindow <= 0 {
		return ""
	}
	return fmt.Sprintf(", or (downstream-window-passed, new_key_safe false) a retry would send again an attempt "+
		"first made over %s ago (downstream_window): nothing was sent, an operator settles it",
		config.FormatDuration(ep.DownstreamWindow))
}

// goneNote describes the endpoint's 410 answers, or is empty when it has
// none: a reference endpoint answers resource-gone when the operation's
// resource no longer exists; a snapshot endpoint with a replay_ttl answers
// replay-expired once its record is compacted to a dedup marker.
func goneNote(ep config.Endpoint) string {
	if ep.Replay.Reference() {
		return "resource-gone: the key's operation completed and its resource no longer exists; nothing ran again."
	}
	if rt := ep.Policy().ReplayTTL; rt > 0 {
		return fmt.Sprintf("replay-expired: the key's operation finished over %s ago (replay_ttl) and only its dedup marker is kept: the answer names the operation id, its state, the recorded status and the resource id; nothing ran again, and a new key would run the intent a second time.", config.FormatDuration(rt))
	}
	return ""
}

func keyNote(ep config.Endpoint) string {
	switch {
	case ep.Shadow():
		return " Shadow mode: no key is honoured yet (Idempotency-Status: ignored)."
	case ep.Key == config.KeyOptional:
		return " Optional: a request without one is passed through uncoordinated."
	}
	return " Required: a request without one is 400 missing-key."
}

func waitNote(ep config.Endpoint) string {
	if ep.InProgress.Wait > 0 {
		return fmt.Sprintf(" after waiting up to %s for the run in flight", ep.InProgress.Wait)
	}
	return ""
}

func keyMode(ep config.Endpoint) string {
	if ep.Key == "" {
		return string(config.KeyRequired)
	}
	return string(ep.Key)
}

func modeOf(ep config.Endpoint) string {
	if ep.Shadow() {
		return string(config.ModeShadow)
	}
	return string(config.ModeEnforce)
}

func onRetryOf(ep config.Endpoint) string {
	if ep.Completes() {
		return string(config.OnRetryComplete)
	}
	return string(config.OnRetryReplay)
}

func replayOf(ep config.Endpoint) string {
	if ep.Replay.Reference() {
		return string(config.ReplayReference)
	}
	return string(config.ReplaySnapshot)
}

func bodyMediaType(ep config.Endpoint) string {
	switch ep.DeclaredBody() {
	case config.BodyJSON:
		return "application/json"
	case config.BodyMultipart:
		return "multipart/form-data"
	}
	if ep.Method == http.MethodGet || ep.Method == http.MethodHead || ep.Method == http.MethodDelete {
		return ""
	}
	return "*/*"
}

// statusHeaders are the headers of the gateway's own answers; replay adds
// the replay's.
func statusHeaders(replay bool) obj {
	h := obj{
		"Idempotency-Status":         obj{"$ref": "#/components/headers/Idempotency-Status"},
		"Idempotency-Key-Expires":    obj{"$ref": "#/components/headers/Idempotency-Key-Expires"},
		"X-Idempotency-Operation-Id": obj{"$ref": "#/components/headers/X-Idempotency-Operation-Id"},
	}
	if replay {
		h["Idempotent-Replayed"] = obj{"$ref": "#/components/headers/Idempotent-Replayed"}
	}
	return h
}

func mergeHeaders(a, b obj) obj {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func problemRef(description string) obj {
	return obj{"description": description, "headers": statusHeaders(false),
		"content": obj{"application/problem+json": obj{"schema": obj{"$ref": "#/components/schemas/Problem"}}}}
}

func components() obj {
	types := make([]any, len(problemTypes))
	for i, t := range problemTypes {
		types[i] = "https://idemcoord.dev/problems/" + t
	}
	statuses := make([]any, len(keyStatuses))
	for i, s := range keyStatuses {
		statuses[i] = s
	}
	str := obj{"type": "string"}
	return obj{
		"headers": obj{
			"Idempotency-Status": obj{"description": "What became of the request's Idempotency-Key; on every answer to a request that carried one.",
				"schema": obj{"type": "string", "enum": statuses}},
			"Idempotent-Replayed": obj{"description": "true when the answer is the key's recorded answer.",
				"schema": obj{"type": "string", "enum": []any{"true"}}},
			"Idempotency-Key-Expires": obj{"description": "HTTP-date until which the key is honoured at least.",
				"schema": str},
			"X-Idempotency-Operation-Id": obj{"description": "The operation behind the key, stable across retries.",
				"schema": obj{"type": "string", "format": "uuid"}},
		},
		"schemas": obj{
			"Problem": obj{"type": "object", "required": []any{"type", "title", "status", "new_key_safe"},
				"properties": obj{
					"type":            obj{"type": "string", "enum": types},
					"title":           str,
					"status":          obj{"type": "integer"},
					"detail":          str,
					"operation_id":    obj{"type": "string", "format": "uuid"},
					"operation_state": str,
					"changed_members": obj{"type": "array", "items": str,
						"description": "fingerprint-mismatch: the members of the body that differ from the key's first request, sorted: RFC 6901 JSON pointers (at most 32, at most 6 levels deep; past that the ancestor holding the change), form part names, or \"body\". Never values. Absent when the body is the same or the key's record predates it."},
					"new_key_safe": obj{"type": "boolean", "description": "Whether the intent may be started over under a new key without risking a double effect."},
				}},
		},
	}
}
