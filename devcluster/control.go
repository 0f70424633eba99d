package devcluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
)

// controlTimeout bounds one stop or start of a region through the control
// endpoint.
const controlTimeout = 30 * time.Second

// controlEndpoints is what GET / of the control endpoint answers: every
// action, so a user who found the URL in the banner finds the rest.
const controlEndpoints = `idemcoord dev control (loopback only)

POST /regions/NAME/stop    stop region NAME cleanly: it drains what is in flight and leaves
                           (the others fail it over at once)
POST /regions/NAME/kill    kill region NAME abruptly: no drain, requests in flight are cut and
                           their operations stay IN_PROGRESS until another region takes them over
                           (see them with: idemctl op list --region NAME)
POST /regions/NAME/start   start region NAME again (recovering, then healthy after the hold time)
POST /bank/hang            make the demo bank hang every charge (work stays in flight)
POST /bank/heal            make the demo bank answer again
GET  /                     this list

Regions: %s
`

// controlHandler serves the dev cluster's control endpoint, loopback only:
// POST /regions/{name}/stop, /kill and /start fail a region (cleanly, or
// abruptly with work in flight) and bring it back, and POST /bank/hang and
// /bank/heal make the demo bank hang, so a user can practise a failover
// and its reconciliation with curl. GET / lists them.
func (c *Cluster) controlHandler() http.Handler {
	mux := http.NewServeMux()
	act := func(verb string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			if !slices.Contains(Regions, name) {
				http.Error(w, fmt.Sprintf("no region %q; the regions are %s", name, strings.Join(Regions, ", ")),
					http.StatusNotFound)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), controlTimeout)
			defer cancel()
			var err error
			switch verb {
			case "stopped":
				err = c.StopRegion(ctx, name)
			case "killed":
				err = c.KillRegion(name)
			default:
				err = c.StartRegion(ctx, name)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "region %s %s\n", name, verb)
		}
	}
	bankFault := func(hang bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if c.Bank == nil {
				http.Error(w, "no demo bank in this cluster", http.StatusNotFound)
				return
			}
			if err := c.Bank.SetFaults(bank.Faults{Hang: hang}); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if hang {
				fmt.Fprintln(w, "bank hangs every charge: payments started now stay in flight")
				return
			}
			fmt.Fprintln(w, "bank answers again")
		}
	}
	mux.HandleFunc("POST /regions/{name}/stop", act("stopped"))
	mux.HandleFunc("POST /regions/{name}/kill", act("killed"))
	mux.HandleFunc("POST /regions/{name}/start", act("started"))
	mux.HandleFunc("POST /bank/hang", bankFault(true))
	mux.HandleFunc("POST /bank/heal", bankFault(false))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, controlEndpoints, strings.Join(Regions, ", "))
	})
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
