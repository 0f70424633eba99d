package devstate

// Store modes of a dev cluster (`idemd dev --store`).
const (
	// StoreSingle is one throwaway PostgreSQL for every region: the fast
	// default.
	StoreSingle = "single"
	// StoreHA is one Patroni-managed PostgreSQL cluster per home region
	// (three members each, the dev etcd as DCS).
	StoreHA = "ha"
)

// StoreCluster is one Patroni cluster of a dev cluster started with
// --store ha: what `idemctl store status` asks for its members.
type StoreCluster struct {
	// Name is the cluster's Patroni scope: its home region.
	Name string `json:"name"`
	// DSN connects to whichever member is primary (multi-host,
	// target_session_attrs=read-write).
	DSN string `json:"dsn"`
	// REST are the members' Patroni REST base URLs.
	REST []string `json:"rest"`
	// Members are the cluster's members with their regions, in start
	// order (the first was the first primary).
	Members []StoreMember `json:"members"`
}

// StoreMember is one member of a StoreCluster.
type StoreMember struct {
	Name   string `json:"name"`
	Region string `json:"region"`
	// Addr is the member's PostgreSQL host:port; REST its Patroni REST
	// base URL.
	Addr string `json:"addr"`
	REST string `json:"rest"`
}
