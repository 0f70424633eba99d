package traffic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/shard"
)

// Traffic is one drill's workload. Run drives the main phase while faults
// are injected; Settle, after healing, drives every intent that has no
// final answer yet to one.
type Traffic struct {
	p       Profile
	t       Target
	seed    uint64
	rec     *history.Recorder
	workers []*worker
	counts  counters
}

// New prepares the workload; nothing is sent until Run.
func New(p Profile, t Target, seed uint64, rec *history.Recorder) (*Traffic, error) {
	if err := errors.Join(p.Validate(), t.Validate()); err != nil {
		return nil, err
	}
	p, t = p.withDefaults(), t.withDefaults()
	tr := &Traffic{p: p, t: t, seed: seed, rec: rec}
	httpc := &http.Client{
		Timeout:       p.AttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{MaxIdleConnsPerHost: max(8, p.Actors), IdleConnTimeout: 30 * time.Second},
	}
	for i := range p.Actors {
		subject := fmt.Sprintf("drill-%d-actor-%d", seed, i)
		w := &worker{tr: tr, id: i, subject: subject, scope: t.Tenant + "/" + subject,
			rng: rand.New(rand.NewPCG(seed, uint64(i)+1))}
		w.shard = shard.Of(w.scope, t.Shards)
		token := func(ctx context.Context) (string, error) { return t.Token(ctx, subject) }
		if t.SDK {
			c, err := tr.sdkClient(i, token)
			if err != nil {
				return nil, err
			}
			w.sdk = c
			tr.workers = append(tr.workers, w)
			continue
		}
		for _, r := range t.Regions {
			c, err := client.New(client.Config{BaseURL: r.URL, HTTPClient: httpc, MaxAttempts: 1, TokenSource: token})
			if err != nil {
				return nil, fmt.Errorf("traffic: region %s: %w", r.Name, err)
			}
			w.clients = append(w.clients, c)
		}
		tr.workers = append(tr.workers, w)
	}
	return tr, nil
}

// Actors returns each worker's actor scope and shard, in worker order.
func (tr *Traffic) Actors() []Actor {
	out := make([]Actor, len(tr.workers))
	for i, w := range tr.workers {
		out[i] = Actor{Scope: w.scope, Shard: w.shard}
	}
	return out
}

// Actor is one actor of the workload.
type Actor struct {
	// Scope is the actor scope (tenant/subject); Shard the shard it
	// hashes to.
	Scope string
	Shard int
}

// Run sends intents from every actor until Profile.Intents were started,
// Profile.Duration passed or ctx ended, and returns when every worker
// stopped. Errors are only programming errors (an invalid intent): what
// the cluster answers, failures included, goes into the history.
func (tr *Traffic) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, tr.p.Duration)
	defer cancel()
	return tr.each(func(w *worker) error { return w.run(ctx) })
}

// Settle re-sends, with their original bodies, the intents that ended
// without a final answer, until each has one, Profile.SettleTimeout passed
// or ctx ended. Run it after every fault healed: the liveness check wants
// every intent's retries to have ended.
func (tr *Traffic) Settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, tr.p.SettleTimeout)
	defer cancel()
	return tr.each(func(w *worker) error { return w.settle(ctx) })
}

// ReplayAcked re-sends, once every fault healed and Settle ran, every
// intent an answer acknowledged, with its key and original body, through
// each worker's own client (the SDK in the sdk mode), until a final answer,
// Profile.SettleTimeout or ctx ends. Its attempts are recorded marked
// AckReplay: the checker wants each to get the acknowledged answer
// (validate's acked_lost), the answer a client retrying later would get.
func (tr *Traffic) ReplayAcked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, tr.p.SettleTimeout)
	defer cancel()
	return tr.each(func(w *worker) error { w.replayAcked(ctx); return nil })
}

// each runs fn on every worker concurrently and waits for all.
func (tr *Traffic) each(fn func(*worker) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(tr.workers))
	for i, w := range tr.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(w)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pace returns how long a worker waits between intents for Profile.Rate.
func (tr *Traffic) pace() time.Duration {
	if tr.p.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) * float64(len(tr.workers)) / tr.p.Rate)
}

// quota is how many intents worker i sends, -1 for no bound: the bound is
// split evenly, so a seed decides every key whatever the scheduling.
func (tr *Traffic) quota(i int) int64 {
	if tr.p.Intents == 0 {
		return -1
	}
	q := tr.p.Intents / len(tr.workers)
	if i < tr.p.Intents%len(tr.workers) {
		q++
	}
	return int64(q)
}

func (tr *Traffic) clock() clock.Clock { return tr.t.Clock }
