package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// minRSABits is the smallest RSA modulus accepted: NIST SP 800-131A
// disallows shorter keys for signatures.
const minRSABits = 2048

// publicKey is one verification key read from a PEM file.
type publicKey struct {
	kid  string // file name without extension
	file string
	key  any // *rsa.PublicKey or *ecdsa.PublicKey (P-256)
}

// keySet holds the verification keys of one algorithm.
type keySet []publicKey

// pick returns the keys a token with the given kid is checked against: the
// key of that kid if there is one, else every key of the set (an issuer may
// name its keys differently from our files; the signature is still checked
// against trusted keys only).
func (s keySet) pick(kid string) []any {
	if kid != "" {
		for _, k := range s {
			if k.kid == kid {
				return []any{k.key}
			}
		}
	}
	keys := make([]any, len(s))
	for i, k := range s {
		keys[i] = k.key
	}
	return keys
}

// loadPublicKey reads the first PEM block of file. Every error names the
// file.
func loadPublicKey(file string) (publicKey, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return publicKey{}, fmt.Errorf("authn: public key: %w", err)
	}
	key, err := parsePublicKeyPEM(data)
	if err != nil {
		return publicKey{}, fmt.Errorf("authn: public key %s: %w", file, err)
	}
	base := filepath.Base(file)
	return publicKey{kid: strings.TrimSuffix(base, filepath.Ext(base)), file: file, key: key}, nil
}

// parsePublicKeyPEM returns the RSA or P-256 public key of the first PEM
// block of data.
func parsePublicKeyPEM(data []byte) (any, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		if strings.Contains(block.Type, "PRIVATE KEY") {
			// A verifier has no business holding a signing key: refuse
			// rather than quietly derive the public half.
			return nil, fmt.Errorf("holds a %s; give the public key only", block.Type)
		}
		return nil, fmt.Errorf("PEM block %q: want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", block.Type)
	}
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minRSABits {
			return nil, fmt.Errorf("RSA key of %d bits; at least %d are required", n, minRSABits)
		}
		return k, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("EC key on curve %s; only P-256 (ES256) is supported", k.Curve.Params().Name)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported key type %T; want RSA (RS256) or EC P-256 (ES256)", key)
	}
}
