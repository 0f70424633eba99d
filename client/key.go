package client

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// MaxKeyLen is the longest key the server accepts, in bytes.
const MaxKeyLen = 255

// keyBytes is the entropy in a NewKey key: 192 bits, which base64url spells
// in exactly 32 characters without padding.
const keyBytes = 24

// NewKey returns a fresh random idempotency key: 32 base64url characters
// (192 bits) from crypto/rand.
//
// Generate it once per business intent, BEFORE the first attempt, and keep
// it across every retry of that intent, including retries after a crash of
// the caller; a new user action is a new intent and gets a new key. Minting
// a new key for a retry turns it into a second operation.
func NewKey() string {
	var b [keyBytes]byte
	// crypto/rand.Read never returns an error and never reads short.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// checkKey reports why k cannot be sent: the server accepts 1 to MaxKeyLen
// bytes of printable ASCII. The error never contains the key, which may be
// guessable or double as a secret.
func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: Key is empty", ErrInvalidIntent)
	}
	if len(k) > MaxKeyLen {
		return fmt.Errorf("%w: Key is %d bytes, over %d", ErrInvalidIntent, len(k), MaxKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return fmt.Errorf("%w: Key byte %d is not printable ASCII", ErrInvalidIntent, i)
		}
	}
	return nil
}

// formatKey spells k as an RFC 8941 sf-string, the form
// draft-ietf-httpapi-idempotency-key-header gives Idempotency-Key: quoted,
// with backslash and double quote escaped. k must have passed checkKey.
func formatKey(k string) string {
	var sb strings.Builder
	sb.Grow(len(k) + 2)
	sb.WriteByte('"')
	for i := 0; i < len(k); i++ {
		if k[i] == '"' || k[i] == '\\' {
			sb.WriteByte('\\')
		}
		sb.WriteByte(k[i])
	}
	sb.WriteByte('"')
	return sb.String()
}
