package config

import (
	"strings"
	"testing"
	"time"
)

// TestAReplayTTLLongerThanTheKeyIsRefusedNamingTheField: the full answer
// cannot outlive the key; check-config names the field and says why.
func TestAReplayTTLLongerThanTheKeyIsRefusedNamingTheField(t *testing.T) {
	tests := []struct{ endpoint, want string }{
		{`{name: create-payment, method: POST, path: /v1/payments, ttl: 24h, replay_ttl: 48h}`,
			`endpoints[0].replay_ttl: 48h is longer than ttl 24h; the full answer cannot be kept longer than the key (set at most ttl, or raise ttl)`},
		{`{name: create-payment, method: POST, path: /v1/payments, replay_ttl: -1h}`,
			`endpoints[0].replay_ttl: must be positive (or unset to keep the full answer for ttl), got -1h`},
	}
	for _, tt := range tests {
		data := strings.Replace(minimal, `{name: create-payment, method: POST, path: /v1/payments}`, tt.endpoint, 1)
		_, err := Parse([]byte(data))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Parse error = %v, want %s", tt.endpoint, err, tt.want)
		}
	}
}

// TestReplayTTLReachesThePolicy: a replay_ttl shorter than ttl makes two
// tiers; one equal to ttl, or unset, keeps one.
func TestReplayTTLReachesThePolicy(t *testing.T) {
	for _, tt := range []struct {
		fields string
		want   time.Duration
	}{{"ttl: 720h, replay_ttl: 24h", 24 * time.Hour}, {"ttl: 24h, replay_ttl: 24h", 0}, {"ttl: 24h", 0}} {
		data := strings.Replace(minimal, `path: /v1/payments}`, `path: /v1/payments, `+tt.fields+`}`, 1)
		c := mustParse(t, data)
		if got := c.Endpoints[0].Policy().ReplayTTL; got != tt.want {
			t.Errorf("%s: policy ReplayTTL = %s, want %s", tt.fields, got, tt.want)
		}
	}
}
