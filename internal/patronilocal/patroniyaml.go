package patronilocal

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// memberYAML is the Patroni configuration of member m.
func (c *Cluster) memberYAML(m *member) ([]byte, error) {
	endpoints := c.cfg.EtcdEndpoints
	if len(m.spec.EtcdEndpoints) > 0 {
		endpoints = m.spec.EtcdEndpoints
	}
	hosts := make([]string, len(endpoints))
	for i, e := range endpoints {
		h, err := etcdHost(e)
		if err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	params := map[string]string{
		// pg_rewind needs the hints (or data checksums) to rejoin a
		// demoted primary.
		"wal_log_hints": "on",
		// A standby retries fetching WAL after a failed attempt every 5 s
		// by default; the spike measured 3-5 s of a failover spent there.
		"wal_retrieve_retry_interval": "500ms",
		"max_connections":             "200",
		"shared_buffers":              "32MB",
		"unix_socket_directories":     m.dir,
		// Throwaway members: a SIGKILL of the processes keeps the page
		// cache, so skipping fsync loses nothing a kill could.
		// full_page_writes stays on: pg_rewind needs it.
		"fsync": "off",
	}
	maps.Copy(params, c.cfg.Parameters)
	restAddr := "127.0.0.1:" + strconv.Itoa(m.restPort)
	pgAddr := "127.0.0.1:" + strconv.Itoa(m.pgPort)
	connectAddr := pgAddr
	if c.cfg.Advertise != nil {
		a, err := c.cfg.Advertise(m.spec.Name, pgAddr)
		if err != nil {
			return nil, fmt.Errorf("patronilocal: %s: advertise: %w", m.spec.Name, err)
		}
		connectAddr = a
	}
	user := map[string]any{"username": "postgres"}
	doc := map[string]any{
		"scope":     c.cfg.Scope,
		"namespace": c.cfg.namespace(),
		"name":      m.spec.Name,
		"log":       map[string]any{"level": "INFO"},
		"restapi":   map[string]any{"listen": restAddr, "connect_address": restAddr},
		"etcd3":     map[string]any{"hosts": hosts, "protocol": "http"},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     int(c.cfg.TTL.Seconds()),
				"loop_wait":               int(c.cfg.LoopWait.Seconds()),
				"retry_timeout":           int(c.cfg.RetryTimeout.Seconds()),
				"maximum_lag_on_failover": 1 << 20,
				"synchronous_mode":        c.cfg.syncMode(),
				"synchronous_mode_strict": c.cfg.Strict,
				"synchronous_node_count":  max(c.cfg.SyncStandbys, 1),
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters":    params,
				},
			},
			// Patroni refuses initdb's nosync, which saves seconds of
			// fsync per start; a custom bootstrap runs initdb with it.
			"method": "fastinit",
			"fastinit": map[string]any{
				"command": fmt.Sprintf("%s -D %s -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions",
					filepath.Join(c.bindir, "initdb"), m.dataDir()),
				"no_params": true,
			},
		},
		"postgresql": map[string]any{
			"listen":          pgAddr,
			"connect_address": connectAddr,
			"data_dir":        m.dataDir(),
			"bin_dir":         c.bindir,
			"pgpass":          filepath.Join(m.dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   user,
				"replication": user,
				"rewind":      user,
			},
			"pg_hba": []string{
				"local all all trust",
				"host replication all 127.0.0.1/32 trust",
				"host all all 127.0.0.1/32 trust",
			},
			"parameters": map[string]string{"unix_socket_directories": m.dir},
		},
		"tags": map[string]any{"region": m.spec.Region},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("patronilocal: %s: %w", m.spec.Name, err)
	}
	return b, nil
}
