package config

import _ "embed" // Example is embedded from example.yaml

// Example is a complete, valid idemd file with every field commented: the
// text of example.yaml, which the README shows byte for byte (a test
// compares them) and a test parses and validates. It reads the HS256
// secret from the environment variable IDEMD_HS256_SECRET, which must hold
// at least 32 bytes (for example `export IDEMD_HS256_SECRET=$(openssl rand
// -hex 32)`).
//
//go:embed example.yaml
var Example string
