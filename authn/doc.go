// Package authn authenticates the caller of a coordinated endpoint from a JWT
// bearer token and turns it into the actor scope that idempotency keys live
// under.
//
// The actor scope is "<tenant>/<subject>", taken from the verified token and
// never from the request body: a key is only ever shared by requests of one
// actor, and a replay never shows one actor's stored response to another.
//
// Tokens are HS256 (a shared secret, for development and single-team
// deployments) or RS256/ES256 (public keys read from PEM files). Each
// algorithm is accepted only with a key of its own kind, so a token cannot
// choose how it is checked ("alg":"none", or an HS256 token whose HMAC secret
// is the RSA public key, are both refused).
//
// A token that verified is remembered, by the SHA-256 of its bytes, for at
// most Config.CacheMaxAge and never past its exp plus the leeway, so a
// client's repeated token costs a hash and a map lookup instead of the full
// check; refusals are never remembered (cache.go).
package authn
