package config

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/idempotency"
)

// An operator who pastes the secret itself into hs256_secret_env (the very
// mistake the message names) must not get the secret echoed to stderr or a
// log collector by check-config or idemd run.
func TestSecretPastedInEnvFieldIsNeverEchoed(t *testing.T) {
	for _, secret := range []string{
		"q8Zr+v1/Kx0Lm2Np4Tt6Vv8Xx0Zz2Bb4Dd6Ff8Hh0=", // base64: fails the name check
		"hunter2 hunter2 hunter2 hunter2 hunter2",    // a passphrase
	} {
		c := mustParse(t, minimal)
		c.Auth.HS256SecretEnv = secret
		err := c.Validate()
		if err == nil {
			_, err = c.AuthConfig()
		}
		if err == nil {
			t.Fatalf("hs256_secret_env %q accepted", secret)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error quotes the secret pasted into hs256_secret_env:\n%v", err)
		}
	}
}

// A status list that makes a success "did not take effect, run it again"
// is a double effect waiting to happen: every retry of a 201 re-runs the
// upstream. Validate must refuse it, naming the field.
func TestSuccessStatusIsNeverRetryable(t *testing.T) {
	tests := []struct {
		name, edit string
		status     int
	}{
		{"retry_statuses covers 2xx", "retry_statuses: [200-599]", 201},
		{"retry_statuses lists 201", "retry_statuses: [201, 429]", 201},
		{"store_statuses misses 201", "store_statuses: [200, 4xx]", 201},
		// The README's own example: a 303 See Other after a POST (the
		// intent ran; here is the resource) becomes "run it again".
		{"README store_statuses misses 3xx", "store_statuses: [2xx, 4xx]", 303},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(minimal, "{name: create-payment, method: POST, path: /v1/payments}",
				"{name: create-payment, method: POST, path: /v1/payments, "+tt.edit+"}", 1)
			c, err := Parse([]byte(y))
			if err != nil {
				return // refused: good
			}
			if got := c.Endpoints[0].Policy().Classify(tt.status); got == idempotency.RetryableFailure {
				t.Fatalf("%s accepted: a %d from the upstream is %s, so the next retry runs the intent again", tt.edit, tt.status, got)
			}
		})
	}
}
