// Package depspin pins modules while the tree is being built; it is removed
// once real imports exist.
package depspin

import (
	_ "github.com/Shopify/toxiproxy/v2"
	_ "github.com/anishathalye/porcupine"
	_ "github.com/cockroachdb/apd/v3"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/rs/zerolog"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "go.opentelemetry.io/otel/exporters/prometheus"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "go.uber.org/zap"
	_ "go.yaml.in/yaml/v3"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
)
