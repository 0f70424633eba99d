package deploy_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/idemcoord/idemcoord/config"
)

// TestRegionConfigsAreValidAndAgree parses each overlay's idemd.yaml with
// config.Parse, reads its auth secret the way idemd does, and checks that
// the file fits its Deployment (listen port, files under mounted Secrets,
// no password in the DSN) and that all regions agree on what must be equal
// everywhere: the regions list and its order, the shard count, routing and
// the endpoints.
func TestRegionConfigsAreValidAndAgree(t *testing.T) {
	var first *config.Config
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			o := build(t, "k8s/overlays/"+region)
			cfg := parseRegionConfig(t, o)
			d := one(t, "Deployment", o.deployments)
			pod := &d.Spec.Template.Spec
			c := container(t, pod, "idemd")

			if cfg.Region != region {
				t.Errorf("region = %q in the %s overlay", cfg.Region, region)
			}
			if got, want := listenPort(t, cfg.Listen), portNumber(c, strPort("http")); got != want {
				t.Errorf("listen port %d, but the container port is %d", got, want)
			}
			if len(cfg.Etcd.Endpoints) == 0 {
				t.Errorf("etcd.endpoints is empty: a multi-region deployment needs the ownership directory")
			}
			var names []string
			for _, r := range cfg.Regions {
				names = append(names, r.Name)
				if len(r.Successors) != len(regions)-1 {
					t.Errorf("regions %s: successors %v, want every other region in failover order", r.Name, r.Successors)
				}
			}
			if !slices.Equal(names, regions) {
				t.Errorf("regions = %v, want %v", names, regions)
			}

			u, err := url.Parse(cfg.Store.DSN)
			if err != nil {
				t.Fatalf("store.dsn: %v", err)
			}
			if _, has := u.User.Password(); has || u.Query().Has("password") {
				t.Errorf("store.dsn carries a password; it must come from PGPASSWORD (a secretKeyRef)")
			}
			if !hasSecretEnv(c, "PGPASSWORD") {
				t.Errorf("PGPASSWORD is not set from a Secret")
			}
			if mode := u.Query().Get("sslmode"); mode != "verify-full" {
				t.Errorf("store.dsn sslmode = %q, want verify-full", mode)
			}

			files := append([]string{cfg.Auth.HS256SecretFile, u.Query().Get("sslrootcert")}, cfg.Auth.PublicKeyFiles...)
			for _, f := range files {
				if f != "" && !mountedFromSecret(pod, c, f) {
					t.Errorf("%s is not a file of a mounted Secret volume", f)
				}
			}
			if cfg.Auth.HS256SecretEnv != "" && !hasSecretEnv(c, cfg.Auth.HS256SecretEnv) {
				t.Errorf("auth.hs256_secret_env %s is not set from a Secret", cfg.Auth.HS256SecretEnv)
			}
			// idemd reads the secret at start; do the same with a stand-in
			// for the file the Secret provides.
			if cfg.Auth.HS256SecretFile != "" {
				cfg.Auth.HS256SecretFile = writeSecret(t)
			}
			if _, err := cfg.AuthConfig(); err != nil {
				t.Errorf("AuthConfig: %v", err)
			}

			if first == nil {
				first = cfg
				return
			}
			for _, f := range []struct {
				name      string
				got, want any
			}{
				{"regions", cfg.Regions, first.Regions},
				{"shards", cfg.Shards, first.Shards},
				{"routing", cfg.Routing, first.Routing},
				{"endpoints", cfg.Endpoints, first.Endpoints},
				{"defaults", cfg.Defaults, first.Defaults},
				{"etcd", cfg.Etcd, first.Etcd},
				{"auth.issuer", cfg.Auth.Issuer, first.Auth.Issuer},
			} {
				if diff := cmp.Diff(f.want, f.got); diff != "" {
					t.Errorf("%s differs from %s's (-%s +%s):\n%s", f.name, first.Region, first.Region, region, diff)
				}
			}
		})
	}
}

// hasSecretEnv reports whether c sets the variable name from a Secret.
func hasSecretEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return true
		}
	}
	return false
}

// mountedFromSecret reports whether path is a key of a Secret volume
// mounted into c (directly or through the volume's items).
func mountedFromSecret(pod *corev1.PodSpec, c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return !strings.Contains(rel, "/")
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return true
				}
			}
		}
	}
	return false
}
