// Package config reads the one YAML file of idemd: where it listens, the
// upstream it fronts, the SQL store and etcd it uses, how callers are
// authenticated, and the idempotency policy of every coordinated endpoint.
//
// Parse and Load decode the file field by field, fill in defaults, and
// validate the result, reporting every problem at once (unknown or repeated
// fields, values of the wrong kind, bad durations and sizes, invalid
// settings) as a *ValidationError whose entries name the field
// ("endpoints[1].lease") and say why. Example is a complete, commented
// file, embedded from example.yaml.
//
// The package turns the file into the types the rest of idemcoord consumes:
// Endpoint.Policy gives the protocol policy of package idempotency,
// Config.AuthConfig the authn.Config of the bearer-token verifier, and
// Router maps a request to its endpoint.
package config
