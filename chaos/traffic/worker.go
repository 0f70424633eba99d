package traffic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
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
	sdk     *client.Client   // Target.SDK: the one multi-region client
	calls   int64            // Target.SDK: the Do calls made so far
	intents []*intent
	// replaying marks the attempts of ReplayAcked (AckReplay).
	replaying bool
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
	// ackStatus is the first acknowledged answer's status.
	ackStatus int
	// header carries Idempotency-First-Sent, stamped when the intent
	// began: every call of the intent sends the same value, as a client
	// retrying an intent across Do calls must (the server takes another
	// value for another intent and answers 422).
	header http.Header
}

func (w *worker) run(ctx context.Context) error {
	quota := w.tr.quota(w.id)
	for n := int64(1); ctx.Err() == nil && (quota < 0 || n <= quota); n++ {
		in := &intent{n: n, key: fmt.Sprintf("drill-%d-%d-%d", w.tr.seed, w.id, n),
			body:   Body{Amount: randomAmount(w.rng), Currency: "EUR", Reference: fmt.Sprintf("ref-%d-%d-%d", w.tr.seed, w.id, n)},
			region: w.rng.IntN(max(1, len(w.clients))),
			header: http.Header{client.HeaderFirstSent: {w.tr.clock().Now().UTC().Format(http.TimeFormat)}}}
		w.intents = append(w.intents, in)
		if err := w.drive(ctx, in, w.mainCalls()); err != nil {
			return err
		}
		if in.acked && w.rng.Float64() < w.tr.p.DuplicateRetry {
			// The client lost the answer and retries: the same body, maybe
			// through another region, must replay the stored answer.
			if len(w.clients) > 1 && w.rng.Float64() < w.tr.p.CrossRegionRetry {
				in.region = (in.region + 1 + w.rng.IntN(len(w.clients)-1)) % len(w.clients)
			}
			op, _ := w.call(ctx, in, in.body.Bytes())
			in.final = op.Ends()
		}
		if in.acked && w.rng.Float64() < w.tr.p.ChangedBody {
			changed := in.body
			changed.Amount = randomAmount(w.rng)
			if changed.Amount == in.body.Amount {
				changed.Amount = "1000.00" // above randomAmount's range: always different
			}
			op, _ := w.call(ctx, in, changed.Bytes())
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

// replayAcked re-sends each acknowledged intent's original body until a
// final answer (at most maxReplayCalls calls) or ctx ends.
func (w *worker) replayAcked(ctx context.Context) {
	w.replaying = true
	defer func() { w.replaying = false }()
	for _, in := range w.intents {
		if !in.acked {
			continue
		}
		for tries := 0; tries < maxReplayCalls && ctx.Err() == nil; tries++ {
			op, retryAfter := w.call(ctx, in, in.body.Bytes())
			if op.Ends() {
				break
			}
			if err := clock.Sleep(ctx, w.tr.clock(), w.wait(in.attempts, retryAfter)); err != nil {
				return
			}
		}
	}
}

// maxReplayCalls bounds ReplayAcked's calls per intent.
const maxReplayCalls = 20

// drive sends in's original body until a final answer, limit calls in
// all, or ctx ends.
func (w *worker) drive(ctx context.Context, in *intent, limit int) error {
	body := in.body.Bytes()
	for tries := 0; tries < limit && ctx.Err() == nil; tries++ {
		if in.attempts > 0 && len(w.clients) > 1 && w.rng.Float64() < w.tr.p.CrossRegionRetry {
			in.region = (in.region + 1 + w.rng.IntN(len(w.clients)-1)) % len(w.clients)
		}
		op, retryAfter := w.call(ctx, in, body)
		if op.Acknowledged() && !in.acked {
			in.ackStatus = op.Status
		}
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
// ceiling, at least a Retry-After, capped at maxRetryWait. attempt may be
// 0: in the sdk mode an intent whose Do made no attempt has none yet.
func (w *worker) wait(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := min(maxRetryWait, w.tr.p.RetryDelay<<min(max(attempt-1, 0), 10))
	d := time.Duration(w.rng.Int64N(int64(ceiling) + 1))
	return min(max(d, retryAfter), maxRetryWait)
}

// mainCalls bounds the calls of an intent in the main phase: MaxAttempts
// single attempts, or one SDK Do that makes up to MaxAttempts itself.
func (w *worker) mainCalls() int {
	if w.sdk != nil {
		return 1
	}
	return w.tr.p.MaxAttempts
}

// call makes one client-level call of in with body: one attempt to
// in.region, or one SDK Do. It returns the call's last recorded attempt
// and the Retry-After that attempt's answer asked for (0 after a Do,
// which waited on its own).
func (w *worker) call(ctx context.Context, in *intent, body []byte) (history.Operation, time.Duration) {
	if w.sdk != nil {
		return w.doSDK(ctx, in, body), 0
	}
	in.attempts++
	return w.send(ctx, in, in.region, body)
}
