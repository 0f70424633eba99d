package config

import (
	"bytes"
	"os"

	"github.com/idemcoord/idemcoord/authn"
)

// AuthConfig returns the authn.Config of the auth section, reading the
// HS256 secret from its file or environment variable. It fails, as a
// *ValidationError naming the field, if the secret cannot be read or is
// shorter than authn.MinSecretBytes. The error never contains the secret.
func (c *Config) AuthConfig() (authn.Config, error) {
	a := c.Auth
	cfg := authn.Config{
		Issuer:         a.Issuer,
		Audience:       a.Audience,
		PublicKeyFiles: append([]string(nil), a.PublicKeyFiles...),
		Leeway:         a.Leeway,
	}
	var p problems
	var field string
	switch {
	case a.HS256SecretFile != "":
		field = "auth.hs256_secret_file"
		data, err := os.ReadFile(a.HS256SecretFile)
		if err != nil {
			p.add(field, "%v", err)
			break
		}
		// Files written with echo or an editor end in a newline that is
		// not part of the secret.
		cfg.HS256Secret = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
		if len(cfg.HS256Secret) == 0 {
			p.add(field, "%s is empty", a.HS256SecretFile)
		}
	case a.HS256SecretEnv != "":
		field = "auth.hs256_secret_env"
		v, ok := os.LookupEnv(a.HS256SecretEnv)
		if !ok || v == "" {
			p.add(field, "environment variable %s is unset or empty; set it to the HS256 secret the token issuer signs with (at least %d bytes)", a.HS256SecretEnv, authn.MinSecretBytes)
		}
		cfg.HS256Secret = []byte(v)
	}
	if n := len(cfg.HS256Secret); n > 0 && n < authn.MinSecretBytes {
		p.add(field, "the secret is %d bytes; at least %d are required (RFC 7518: as long as the SHA-256 output)", n, authn.MinSecretBytes)
	}
	if len(p) == 0 {
		addJoined(&p, "auth", cfg.Validate())
	}
	if err := p.err(); err != nil {
		return authn.Config{}, err
	}
	return cfg, nil
}
