package devcluster

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
)

// PortsBusyError reports dev cluster ports that another process already
// listens on.
type PortsBusyError struct {
	// PortBase is the port base that was asked for.
	PortBase int
	// Busy lists each busy port with what the cluster wanted it for.
	Busy []string
}

// Error names the busy ports and the way out.
func (e *PortsBusyError) Error() string {
	return fmt.Sprintf("devcluster: port base %d: %s already in use (another dev cluster?); choose other ports with --port-base (the cluster uses N to N+2 and N+100 to N+102)",
		e.PortBase, strings.Join(e.Busy, ", "))
}

// Ports returns the fixed ports of a cluster at portBase, each with its
// use: the gateways, then the demo payments service and bank.
func Ports(portBase int) map[int]string {
	m := map[int]string{portBase + 100: "payments", portBase + 101: "bank", portBase + 102: "dev control"}
	for i, r := range Regions {
		m[portBase+i] = "region " + r
	}
	return m
}

// CheckPorts returns a *PortsBusyError if any fixed port of a cluster at
// portBase cannot be listened on. Port base 0 picks free ports: nothing to
// check.
func CheckPorts(portBase int) error {
	if portBase == 0 {
		return nil
	}
	if portBase < 1 || portBase+102 > 65535 {
		return fmt.Errorf("devcluster: port base %d: the cluster needs ports %d to %d; choose --port-base within 1-65433", portBase, portBase, portBase+102)
	}
	e := &PortsBusyError{PortBase: portBase}
	uses := Ports(portBase)
	for _, port := range slices.Sorted(maps.Keys(uses)) {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			e.Busy = append(e.Busy, fmt.Sprintf("%d (%s)", port, uses[port]))
			continue
		}
		ln.Close()
	}
	if len(e.Busy) > 0 {
		return e
	}
	return nil
}
