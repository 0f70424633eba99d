//go:build drill

package drillpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxControlBody bounds a control request's body.
const maxControlBody = 4 << 10

// armedReply is the answer of every /crash call.
type armedReply struct {
	Armed []Point `json:"armed"`
}

// skewRequest is PUT /clock/skew's body.
type skewRequest struct {
	Offset string `json:"offset"`
}

// skewReply is the answer of /clock/skew: the offset (a Go duration) and
// the skewed clock's reading when it answered.
type skewReply struct {
	Offset string    `json:"offset"`
	Now    time.Time `json:"now"`
}

// errorReply is the answer of a refused control call.
type errorReply struct {
	Error string `json:"error"`
}

// Control returns the drill control API of DRILLAPI.md over the process's
// crash points and skew:
//
//	PUT    /crash/{point}  arm a crash point (400 naming the known ones)
//	DELETE /crash/{point}  disarm it
//	GET    /crash          the armed points
//	PUT    /clock/skew     {"offset":"-1500ms"} shifts skew's Now; "0s" undoes it
//	GET    /clock/skew     the current offset
//	GET    /healthz        200 "ok"
//
// It has no authentication: serve it on a loopback address only.
func Control(skew *SkewClock) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /crash", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, armedReply{Armed: Armed()})
	})
	crash := func(set func(Point) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			p, err := Parse(r.PathValue("point"))
			if err == nil {
				err = set(p)
			}
			if err != nil {
				reply(w, http.StatusBadRequest, errorReply{Error: err.Error()})
				return
			}
			reply(w, http.StatusOK, armedReply{Armed: Armed()})
		}
	}
	mux.HandleFunc("PUT /crash/{point}", crash(Arm))
	mux.HandleFunc("DELETE /crash/{point}", crash(Disarm))
	mux.HandleFunc("GET /clock/skew", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, skewReply{Offset: skew.Offset().String(), Now: skew.Now()})
	})
	mux.HandleFunc("PUT /clock/skew", func(w http.ResponseWriter, r *http.Request) {
		var req skewRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, maxControlBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			reply(w, http.StatusBadRequest, errorReply{Error: fmt.Sprintf(`body: want {"offset":"<Go duration>"}: %v`, err)})
			return
		}
		d, err := time.ParseDuration(req.Offset)
		if err != nil {
			reply(w, http.StatusBadRequest, errorReply{Error: fmt.Sprintf("offset: %v", err)})
			return
		}
		skew.SetOffset(d)
		reply(w, http.StatusOK, skewReply{Offset: skew.Offset().String(), Now: skew.Now()})
	})
	return mux
}

// reply writes v as JSON with status.
func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
