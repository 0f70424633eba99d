package replay

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// SecretPlaceholder is what a redacted secret field holds in a replay.
const SecretPlaceholder = "[redacted: shown once]"

// HeaderRedacted lists, on a replay, the JSON pointers of the secret
// fields replaced by SecretPlaceholder.
const HeaderRedacted = "Idempotent-Redacted"

// sealedPrefix starts the JSON string that stands for an encrypted secret
// in a stored body: sealedPrefix + key id + ":" + base64url(nonce||sealed).
const sealedPrefix = "idemcoord-sealed:v1:"

// errSecretUnavailable means a stored secret cannot be opened: its key id
// is no longer configured, or the key does not open it. The replay fails
// closed: neither the secret nor its sealed form is shown.
var errSecretUnavailable = errors.New("replay: stored secret cannot be opened")

// sealer keeps one endpoint's secret fields out of its stored snapshots.
type sealer struct {
	mode     config.SecretsMode
	fields   []string
	pointers [][]string
	primary  string
	aeads    map[string]cipher.AEAD
}

// newSealers builds the sealers of the endpoints that have secrets.
func newSealers(eps []config.Endpoint) (map[string]*sealer, error) {
	out := map[string]*sealer{}
	for _, ep := range eps {
		if !ep.Secrets.Enabled() {
			continue
		}
		s := &sealer{mode: ep.Secrets.Mode, fields: ep.Secrets.Fields, aeads: map[string]cipher.AEAD{}}
		for _, f := range ep.Secrets.Fields {
			p, err := idempotency.ParsePointer(f)
			if err != nil {
				return nil, fmt.Errorf("gateway: endpoint %s: secrets: %w", ep.Name, err)
			}
			s.pointers = append(s.pointers, p)
		}
		keys, err := ep.Secrets.LoadKeys()
		if err != nil {
			return nil, fmt.Errorf("gateway: endpoint %s: secrets: %w", ep.Name, err)
		}
		for i, k := range ep.Secrets.Keys {
			block, err := aes.NewCipher(keys[k.ID])
			if err != nil {
				return nil, fmt.Errorf("gateway: endpoint %s: secrets key %s: %w", ep.Name, k.ID, err)
			}
			s.aeads[k.ID], _ = cipher.NewGCM(block) // never fails for AES
			if i == 0 {
				s.primary = k.ID
			}
		}
		out[ep.Name] = s
	}
	return out, nil
}

// aad binds a sealed value to its actor, endpoint and field: it opens for
// no other record's owner and in no other place.
func aad(actor, endpoint, field string) []byte {
	return []byte(actor + "\x00" + endpoint + "\x00" + field)
}

// seal returns the snapshot to store: each secret field replaced by the
// placeholder (redact) or its sealed form (encrypt). A body that is not
// JSON, or does not parse, is not stored at all: what cannot be searched
// for secrets is not kept.
func (s *sealer) seal(actor, endpoint string, snap store.Snapshot) store.Snapshot {
	if len(snap.Body) == 0 {
		return snap
	}
	spans, err := findSpans(snap.Body, s.pointers)
	if err != nil {
		snap.Body, snap.BodyOmitted = nil, true
		return snap
	}
	snap.Body = splice(snap.Body, spans, func(sp span) []byte {
		if s.mode == config.SecretsRedact {
			b, _ := json.Marshal(SecretPlaceholder)
			return b
		}
		nonce := make([]byte, s.aeads[s.primary].NonceSize())
		rand.Read(nonce)
		sealed := s.aeads[s.primary].Seal(nonce, nonce, snap.Body[sp.start:sp.end], aad(actor, endpoint, s.fields[sp.field]))
		b, _ := json.Marshal(sealedPrefix + s.primary + ":" + base64.RawURLEncoding.EncodeToString(sealed))
		return b
	})
	return snap
}

// reveal returns a stored body as the owning actor's replay shows it:
// sealed fields opened, and the pointers of redacted ones. It returns
// errSecretUnavailable when a sealed field cannot be opened.
func (s *sealer) reveal(actor, endpoint string, body []byte) ([]byte, []string, error) {
	if len(body) == 0 {
		return body, nil, nil
	}
	spans, err := findSpans(body, s.pointers)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: stored body does not parse", errSecretUnavailable)
	}
	var redacted []string
	var openErr error
	out := splice(body, spans, func(sp span) []byte {
		raw := body[sp.start:sp.end]
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return raw
		}
		if str == SecretPlaceholder {
			redacted = append(redacted, s.fields[sp.field])
			return raw
		}
		rest, ok := strings.CutPrefix(str, sealedPrefix)
		if !ok {
			return raw
		}
		kid, enc, _ := strings.Cut(rest, ":")
		aead, known := s.aeads[kid]
		sealed, decErr := base64.RawURLEncoding.DecodeString(enc)
		if !known || decErr != nil || len(sealed) < aead.NonceSize() {
			openErr = fmt.Errorf("%w: key id %q", errSecretUnavailable, kid)
			return nil
		}
		n := aead.NonceSize()
		plain, err := aead.Open(nil, sealed[:n], sealed[n:], aad(actor, endpoint, s.fields[sp.field]))
		if err != nil {
			openErr = fmt.Errorf("%w: key id %q does not open it", errSecretUnavailable, kid)
			return nil
		}
		return plain
	})
	if openErr != nil {
		return nil, nil, openErr
	}
	return out, redacted, nil
}

// seal applies the endpoint's secrets to a snapshot to be stored.
func (st *Stage) seal(c *exchange.Request, snap store.Snapshot) store.Snapshot {
	if s := st.secrets[c.Endpoint.Name]; s != nil {
		return s.seal(c.Actor, c.Endpoint.Name, snap)
	}
	return snap
}

// Reveal opens a record's secret fields for its owning actor (the
// caller found it under that actor's scope) and sets HeaderRedacted on w
// when fields were redacted.
func (st *Stage) Reveal(w http.ResponseWriter, actor string, rec store.Record) (store.Record, error) {
	s := st.secrets[rec.Scope.Endpoint]
	if s == nil || rec.Purged || rec.Compacted {
		return rec, nil
	}
	body, redacted, err := s.reveal(actor, rec.Scope.Endpoint, rec.Snapshot.Body)
	if err != nil {
		return rec, err
	}
	if len(redacted) > 0 && w != nil {
		w.Header().Set(HeaderRedacted, strings.Join(redacted, ", "))
	}
	rec.Snapshot.Body = body
	return rec, nil
}

// secretUnavailable answers 500: the stored answer holds a secret this
// instance cannot open. Nothing is shown, nothing runs again.
func secretUnavailable(c *exchange.Request, err error) {
	c.Outcomes.Log.ErrorContext(c.R.Context(), "replay refused: stored secret cannot be opened", "endpoint", c.Endpoint.Name, "err", err)
	c.Refuse("secret_unavailable", exchange.Problem{Type: "secret-unavailable",
		Title:  "the stored answer holds a secret this instance cannot open",
		Detail: "the operation completed; its secrets key is not configured here",
		Status: http.StatusInternalServerError})
}
