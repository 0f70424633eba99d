package traffic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
)

// worker is one actor: it sends its intents one after another. Its rng is
// its own, seeded from the run's seed and its index, so a seed replays the
// same keys, bodies and region choices.
type worker struct {
	tr      *Traffic
	id      int
	subject string
	scope   string
	shard   int
	rng     *rand.Rand
	clients []*client.Client // one per region, in Target.Regions order
	intents []*intent
}

// intent is one business intent and what became of it.
type intent struct {
	n        int64
	key      string
	body     Body
	region   int // where the last attempt went
	attempts int
	final    bool // the last attempt ended the intent
	acked    bool // an attempt of the original body was acknowledged
	// firstSent is the Idempotency-First-Sent of the first attempt; every
	// attempt sends it, whichever region's client makes it (another
	// first-sent time under the key would be another request: 422).
	firstSent string
}

func (w *worker) run(ctx context.Context) error {
	quota := w.tr.quota(w.id)
	for n := int64(1); ctx.Err() == nil && (quota < 0 || n <= quota); n++ {
		in := &intent{n: n, key: fmt.Sprintf("drill-%d-%d-%d", w.tr.seed, w.id, n),
			body:   Body{Amount: randomAmount(w.rng), Currency: "EUR", Reference: fmt.Sprintf("ref-%d-%d-%d", w.tr.seed, w.id, n)},
			region: w.rng.IntN(len(w.clients))}
		w.intents = append(w.intents, in)
		if err := w.drive(ctx, in, w.tr.p.MaxAttempts); err != nil {
			return err
		}
		if in.acked && w.rng.Float64() < w.tr.p.DuplicateRetry {
			// The client lost the answer and retries: the same body, maybe
			// through another region, must replay the stored answer.
			if len(w.clients) > 1 && w.rng.Float64() < w.tr.p.CrossRegionRetry {
				in.region = (in.region + 1 + w.rng.IntN(len(w.clients)-1)) % len(w.clients)
			}
			in.attempts++
			op, _ := w.send(ctx, in, in.region, in.body.Bytes())
			in.final = op.Ends()
		}
		if in.acked && w.rng.Float64() < w.tr.p.ChangedBody {
			changed := in.body
			changed.Amount = randomAmount(w.rng)
			if changed.Amount == in.body.Amount {
				changed.Amount = "1000.00" // above randomAmount's range: always different
			}
			in.attempts++
			op, _ := w.send(ctx, in, in.region, changed.Bytes())
			in.final = op.Ends()
		}
		if err := clock.Sleep(ctx, w.tr.clock(), w.tr.pace()); err != nil {
			return nil
		}
	}
	return nil
}

func (w *worker) settle(ctx context.Context) error {
	for _, in := range w.intents {
		if in.final {
			continue
		}
		if err := w.drive(ctx, in, 1<<30); err != nil {
			return err
		}
	}
	return nil
}

// drive sends in's original body until a final answer, limit attempts in
// all, or ctx ends.
func (w *worker) drive(ctx context.Context, in *intent, limit int) error {
	body := in.body.Bytes()
	for tries := 0; tries < limit && ctx.Err() == nil; tries++ {
		if in.attempts > 0 && len(w.clients) > 1 && w.rng.Float64() < w.tr.p.CrossRegionRetry {
			in.region = (in.region + 1 + w.rng.IntN(len(w.clients)-1)) % len(w.clients)
		}
		in.attempts++
		op, retryAfter := w.send(ctx, in, in.region, body)
		in.acked = in.acked || op.Acknowledged()
		if in.final = op.Ends(); in.final {
			return nil
		}
		if err := clock.Sleep(ctx, w.tr.clock(), w.wait(in.attempts, retryAfter)); err != nil {
			return nil
		}
	}
	return nil
}

// wait is the backoff before the next attempt: full jitter over a doubling
// ceiling, at least a Retry-After, capped at maxRetryWait.
func (w *worker) wait(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := min(maxRetryWait, w.tr.p.RetryDelay<<min(attempt-1, 10))
	d := time.Duration(w.rng.Int64N(int64(ceiling) + 1))
	return min(max(d, retryAfter), maxRetryWait)
}
