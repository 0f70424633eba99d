package gateway

// Waiting returns how many requests g holds waiting for runs in flight.
func Waiting(g *Gateway) int { return g.waits.waiting() }
