package devcluster

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// controlTimeout bounds one stop or start of a region through the control
// endpoint.
const controlTimeout = 30 * time.Second

// controlHandler serves the dev cluster's control endpoint, loopback only:
// POST /regions/{name}/stop and /start fail a region and bring it back, so
// a user can watch a failover happen with curl.
func (c *Cluster) controlHandler() http.Handler {
	mux := http.NewServeMux()
	act := func(stop bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			ctx, cancel := context.WithTimeout(r.Context(), controlTimeout)
			defer cancel()
			var err error
			if stop {
				err = c.StopRegion(ctx, name)
			} else {
				err = c.StartRegion(ctx, name)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			verb := "started"
			if stop {
				verb = "stopped"
			}
			fmt.Fprintf(w, "region %s %s\n", name, verb)
		}
	}
	mux.HandleFunc("POST /regions/{name}/stop", act(true))
	mux.HandleFunc("POST /regions/{name}/start", act(false))
	return mux
}

// startControl serves the control endpoint at base+102 (any free port
// with a zero base) and returns its URL.
func (c *Cluster) startControl(portBase int) (string, error) {
	addr := "127.0.0.1:0"
	if portBase != 0 {
		addr = fmt.Sprintf("127.0.0.1:%d", portBase+102)
	}
	return c.serve(addr, c.controlHandler())
}
