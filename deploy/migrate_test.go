package deploy_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestOverlaysMigrateTheSchemaWithAJob: every region's overlay applies the
// schema itself, with a Job running `idemctl migrate` from the same image
// and the same idemd.yaml, store CA and password as the Deployment, as a
// non-root pod whose own NetworkPolicy lets it reach DNS and CockroachDB;
// the finished Job removes itself so the next apply runs it again.
func TestOverlaysMigrateTheSchemaWithAJob(t *testing.T) {
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			o := build(t, "k8s/overlays/"+region)
			job := one(t, "Job", o.jobs)
			d := one(t, "Deployment", o.deployments)
			pod := &job.Spec.Template.Spec
			c := container(t, pod, "migrate")
			if want := []string{"/usr/local/bin/idemctl", "migrate", "--config", "/etc/idemd/idemd.yaml"}; len(c.Command) < 4 || !slices.Equal(c.Command[:4], want) {
				t.Errorf("Job command %q, want it to start %q", c.Command, want)
			}
			if gw := container(t, &d.Spec.Template.Spec, "idemd"); c.Image != gw.Image {
				t.Errorf("Job image %q, Deployment image %q: want the same release", c.Image, gw.Image)
			}
			volume := func(spec *corev1.PodSpec, name string) corev1.Volume {
				for _, v := range spec.Volumes {
					if v.Name == name {
						return v
					}
				}
				t.Fatalf("no volume %s", name)
				return corev1.Volume{}
			}
			if j, g := volume(pod, "config"), volume(&d.Spec.Template.Spec, "config"); j.ConfigMap == nil || g.ConfigMap == nil || j.ConfigMap.Name != g.ConfigMap.Name {
				t.Errorf("Job config volume %+v, Deployment's %+v: want the same ConfigMap", j.ConfigMap, g.ConfigMap)
			}
			if v := volume(pod, "store-ca"); v.Secret == nil || v.Secret.SecretName != "idemd-store" {
				t.Errorf("Job store-ca volume %+v, want the idemd-store Secret", v)
			}
			var pw bool
			for _, e := range c.Env {
				pw = pw || (e.Name == "PGPASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
			}
			if !pw {
				t.Errorf("Job has no PGPASSWORD from a Secret")
			}
			checkNonRoot(t, pod, c)
			if job.Spec.TTLSecondsAfterFinished == nil || job.Spec.BackoffLimit == nil {
				t.Errorf("Job: want ttlSecondsAfterFinished (so the next apply runs it again) and a backoffLimit")
			}
			var np bool
			for _, p := range o.netpols {
				np = np || p.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] == job.Spec.Template.Labels["app.kubernetes.io/name"]
			}
			if !np {
				t.Errorf("no NetworkPolicy selects the Job's pods %v", job.Spec.Template.Labels)
			}
		})
	}
}
