package gateway

// Waiting returns how many requests g holds waiting for runs in flight.
func Waiting(g *Gateway) int { return g.waits.waiting() }

// Closing reports whether g's Close has begun.
func Closing(g *Gateway) bool {
	return g.work.Closing()
}
