package gateway

import "github.com/idemcoord/idemcoord/gateway/replay"

// SecretPlaceholder is what a redacted secret field holds in a replay
// (replay.SecretPlaceholder).
const SecretPlaceholder = replay.SecretPlaceholder

// HeaderRedacted lists, on a replay, the JSON pointers of the secret
// fields replaced by SecretPlaceholder (replay.HeaderRedacted).
const HeaderRedacted = replay.HeaderRedacted
