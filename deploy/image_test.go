package deploy_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path"
	"strings"
	"testing"
)

// nonrootUID is the uid of the distroless image's nonroot user.
const nonrootUID = 65532

// TestImageMatchesTheDeployment reads deploy/Dockerfile and checks that the
// image it describes is the one the Deployment expects: a static build on
// distroless nonroot, running as uid 65532, with an entrypoint that reads
// the config file the ConfigMap mounts. (No Docker engine here: the image
// itself is not built by any test.)
func TestImageMatchesTheDeployment(t *testing.T) {
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var from []string
	var user string
	var entrypoint []string
	var static bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch fields := strings.Fields(line); {
		case len(fields) == 0 || strings.HasPrefix(line, "#"):
		case fields[0] == "FROM":
			from = append(from, fields[1])
		case fields[0] == "USER":
			user = fields[1]
		case fields[0] == "ENTRYPOINT":
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT")), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT is not exec form: %v", err)
			}
		}
		if strings.Contains(line, "CGO_ENABLED=0 go build -trimpath") {
			static = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(from) != 2 || !strings.HasPrefix(from[0], "golang:1.26") || from[1] != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("stages %v, want a golang:1.26 builder and gcr.io/distroless/static-debian12:nonroot", from)
	}
	if !static {
		t.Errorf("no CGO_ENABLED=0 go build -trimpath: the distroless static base has no libc")
	}
	if user != "nonroot" {
		t.Errorf("USER %q, want nonroot", user)
	}
	if len(entrypoint) != 4 || path.Base(entrypoint[0]) != "idemd" || entrypoint[1] != "run" || entrypoint[2] != "--config" {
		t.Fatalf("ENTRYPOINT %v, want idemd run --config FILE", entrypoint)
	}

	o := build(t, "k8s/overlays/us-east")
	d := one(t, "Deployment", o.deployments)
	pod := &d.Spec.Template.Spec
	c := container(t, pod, "idemd")
	if len(c.Command) > 0 || len(c.Args) > 0 {
		t.Errorf("the container overrides the entrypoint (%v %v)", c.Command, c.Args)
	}
	if uid := ptrValue(pod.SecurityContext.RunAsUser, 0); uid != nonrootUID {
		t.Errorf("runAsUser %d, want the image's nonroot uid %d", uid, nonrootUID)
	}
	cm := one(t, "ConfigMap", o.configMaps)
	dir, file := path.Split(entrypoint[3])
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name && strings.TrimSuffix(m.MountPath, "/")+"/" == dir {
				_, mounted = cm.Data[file]
			}
		}
	}
	if !mounted {
		t.Errorf("the entrypoint reads %s, which is not a key of the mounted ConfigMap %s", entrypoint[3], cm.Name)
	}
}
