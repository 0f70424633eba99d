package config

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"

	"github.com/idemcoord/idemcoord/idempotency"
)

// SecretsMode says how response fields that must be shown only once are
// kept out of the stored snapshot.
type SecretsMode string

// Secrets modes.
const (
	// SecretsRedact stores each secret field as SecretPlaceholder; a
	// replay shows the placeholder and says so in a header.
	SecretsRedact SecretsMode = "redact"
	// SecretsEncrypt stores each secret field sealed with AES-256-GCM
	// under the first of Keys; a replay to the owning actor opens it with
	// the key its id names.
	SecretsEncrypt SecretsMode = "encrypt"
)

// SecretKeyBytes is the size of a secrets key: AES-256.
const SecretKeyBytes = 32

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

// Secrets configures the response fields of an endpoint that are never
// stored in clear.
type Secrets struct {
	// Mode is "redact" or "encrypt". Required with Fields.
	Mode SecretsMode `yaml:"mode"`
	// Fields are RFC 6901 JSON pointers into the response body
	// ("/api_key", "/card/cvc").
	Fields []string `yaml:"fields"`
	// Keys are the encryption keys, newest first: the first seals, every
	// one opens the records sealed under its id. Rotate by adding a new
	// key in front and removing an old one only once no record sealed
	// under it remains (ttl after the rotation). Required for encrypt.
	Keys []SecretKey `yaml:"keys"`
}

// SecretKey names one key. The key is 32 bytes, written in standard
// base64, in a file or an environment variable; it is never logged.
type SecretKey struct {
	// ID is stored beside each sealed value; 1 to 32 of [A-Za-z0-9._-].
	ID string `yaml:"id"`
	// File holds the base64 key (a trailing newline is ignored).
	File string `yaml:"file"`
	// Env names the environment variable that holds the base64 key.
	Env string `yaml:"env"`
}

// Enabled reports whether any field is secret.
func (s Secrets) Enabled() bool { return len(s.Fields) > 0 || s.Mode != "" }

// LoadKeys reads every key, by id.
func (s Secrets) LoadKeys() (map[string][]byte, error) {
	keys := map[string][]byte{}
	for i, k := range s.Keys {
		b, err := k.load()
		if err != nil {
			return nil, fmt.Errorf("keys[%d]: %w", i, err)
		}
		keys[k.ID] = b
	}
	return keys, nil
}

func (k SecretKey) load() ([]byte, error) {
	var text string
	switch {
	case k.File != "" && k.Env != "":
		return nil, fmt.Errorf("set one of file and env, not both")
	case k.File != "":
		data, err := os.ReadFile(k.File)
		if err != nil {
			return nil, err
		}
		text = string(bytes.TrimRight(data, "\r\n"))
	case k.Env != "":
		v, ok := os.LookupEnv(k.Env)
		if !ok || v == "" {
			return nil, fmt.Errorf("environment variable %s is unset or empty", k.Env)
		}
		text = v
	default:
		return nil, fmt.Errorf("file or env is required")
	}
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(b) != SecretKeyBytes {
		return nil, fmt.Errorf("the key must be %d bytes in standard base64", SecretKeyBytes)
	}
	return b, nil
}

// checkSecrets validates an endpoint's secrets, reported under at.
func (e Endpoint) checkSecrets(p *problems, at string) {
	s := e.Secrets
	if !s.Enabled() {
		return
	}
	at += ".secrets"
	switch s.Mode {
	case SecretsRedact, SecretsEncrypt:
	default:
		p.add(at+".mode", "must be %q or %q, got %q", SecretsRedact, SecretsEncrypt, s.Mode)
	}
	if len(s.Fields) == 0 {
		p.add(at+".fields", "at least one JSON pointer is required")
	}
	for i, f := range s.Fields {
		if f == "" {
			p.add(fmt.Sprintf("%s.fields[%d]", at, i), "the whole body cannot be a secret field; name a member")
			continue
		}
		if _, err := idempotency.ParsePointer(f); err != nil {
			p.add(fmt.Sprintf("%s.fields[%d]", at, i), "%q: %v", f, err)
		}
	}
	if s.Mode == SecretsEncrypt && len(s.Keys) == 0 {
		p.add(at+".keys", "at least one key is required to encrypt")
	}
	if s.Mode == SecretsRedact && len(s.Keys) > 0 {
		p.add(at+".keys", "keys are for encrypt; redact stores no secret")
	}
	seen := map[string]int{}
	for i, k := range s.Keys {
		kat := fmt.Sprintf("%s.keys[%d]", at, i)
		if !keyIDRE.MatchString(k.ID) {
			p.add(kat+".id", "must be 1 to 32 of [A-Za-z0-9._-], got %q", k.ID)
		} else if j, dup := seen[k.ID]; dup {
			p.add(kat+".id", "%q is already used by keys[%d]", k.ID, j)
		} else {
			seen[k.ID] = i
		}
		if _, err := k.load(); err != nil {
			p.add(kat, "%v", err)
		}
	}
}
