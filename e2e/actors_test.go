package e2e

import (
	"net/http"
	"testing"
)

// TestKeyScopedToActor replays actor A's key and body as actor B: the scope
// of a key is (actor, endpoint, key), so B gets an independent operation,
// payment and charge, never A's result (design step 6, "another actor never
// sees the result"); and the operations API answers each actor only about
// its own operations, with a 404 that does not reveal the other's.
func TestKeyScopedToActor(t *testing.T) {
	c := sharedCluster(t)
	actorA, actorB := uniqueName("actor-a"), uniqueName("actor-b")
	tokA, tokB := token(t, c, actorA), token(t, c, actorB)
	key := uniqueName("shared-key")
	body := paymentBody("7.00", "order-actors")
	l := ledger{t, c}

	a := mustPost(t, c.Regions[0].URL, tokA, key, body)
	if a.Status != http.StatusCreated {
		t.Fatalf("actor A: %v; want 201", a)
	}
	b := mustPost(t, c.Regions[1].URL, tokB, key, body)
	if b.Status != http.StatusCreated {
		t.Fatalf("actor B, same key and body: %v; want 201 of its own", b)
	}
	if b.replayed() {
		t.Errorf("actor B got a replay of actor A's answer")
	}
	opA, opB := a.opID(), b.opID()
	if opA == "" || opA == opB {
		t.Errorf("operation ids A %q, B %q; want two different ids", opA, opB)
	}
	payA, payB := a.receipt(t).PaymentID, b.receipt(t).PaymentID
	if payA == payB {
		t.Errorf("both actors got payment %s; want independent payments", payA)
	}
	l.exactlyOnce("actor A", opA)
	l.exactlyOnce("actor B", opB)
	if p := l.find(opB); p.Actor != scope(actorB) || p.ID.String() != payB {
		t.Errorf("B's payment row: actor %q id %s; want %q and %s", p.Actor, p.ID, scope(actorB), payB)
	}
	for _, who := range []struct {
		actor string
		want  int
	}{{actorA, 1}, {actorB, 1}} {
		if rows, charges := l.byActor(scope(who.actor)); rows != who.want || charges != who.want {
			t.Errorf("actor %s: %d rows, %d charges; want %d each", who.actor, rows, charges, who.want)
		}
	}

	for _, tc := range []struct {
		name       string
		tok, opID  string
		wantStatus int
	}{
		{"A reads A's", tokA, opA, http.StatusOK},
		{"B reads A's", tokB, opA, http.StatusNotFound},
		{"B reads B's", tokB, opB, http.StatusOK},
		{"A reads B's", tokA, opB, http.StatusNotFound},
		{"A reads a made-up id", tokA, "0190a6d4-0000-7000-8000-000000000000", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, region := range c.Regions {
				r, op := getOperation(t, region.URL, tc.tok, tc.opID)
				if r.Status != tc.wantStatus {
					t.Errorf("%s: %v; want %d", region.Name, r, tc.wantStatus)
					continue
				}
				if tc.wantStatus == http.StatusOK && (op.OperationID != tc.opID || op.State != "COMPLETED" ||
					op.Response == nil || op.Response.Status != http.StatusCreated) {
					t.Errorf("%s: operation %+v; want %s COMPLETED with a stored 201", region.Name, op, tc.opID)
				}
				if tc.wantStatus == http.StatusNotFound && r.problem(t).OperationID != "" {
					t.Errorf("%s: the 404 names an operation: %v", region.Name, r)
				}
			}
		})
	}

	// A's retry still replays A's own payment.
	if r := mustPost(t, c.Regions[2].URL, tokA, key, body); !r.replayed() || r.receipt(t).PaymentID != payA {
		t.Errorf("A's retry after B's run: %v; want a replay of payment %s", r, payA)
	}
}
