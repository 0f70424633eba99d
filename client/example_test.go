package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/idemcoord/idemcoord/client"
)

// Example charges an order once, even though the gateway is still busy with
// it on the first attempt and the caller later sends the intent again.
func Example() {
	// A stand-in for an idemcoord gateway whose first answer per key is
	// 409 "in progress" with Retry-After: 0.
	g := newGateway()
	g.failFirst, g.failStatus, g.retryAfter = 1, 409, "0"
	srv := httptest.NewServer(g)
	defer srv.Close()

	c, err := client.New(client.Config{BaseURL: srv.URL, Token: "example-token"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	// One key per business intent, made before the first attempt.
	key := client.NewKey()
	charge := map[string]any{"order": "o-17", "amount": 4200}

	resp, err := c.PostJSON(ctx, "/v1/payments", key, charge)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("status %d after %d attempts, replayed %v\n", resp.Status, resp.Attempts, resp.Replayed)

	// The same intent sent again, say by a worker that crashed before it
	// recorded the result: same key, so the stored answer comes back.
	again, err := c.PostJSON(ctx, "/v1/payments", key, charge)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("status %d, replayed %v, same operation %v\n", again.Status, again.Replayed, again.OperationID == resp.OperationID)
	// Output:
	// status 201 after 2 attempts, replayed false
	// status 201, replayed true, same operation true
}

// ExampleClient_Do shows how to read Do's errors.
func ExampleClient_Do() {
	srv := httptest.NewServer(newGateway())
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	key := client.NewKey()
	if _, err := c.Do(ctx, client.Intent{Method: "POST", Path: "/v1/payments", Key: key, Body: []byte(`{"amount":1}`)}); err != nil {
		fmt.Println(err)
		return
	}

	// A bug reuses the key for another request.
	resp, err := c.Do(ctx, client.Intent{Method: "POST", Path: "/v1/payments", Key: key, Body: []byte(`{"amount":2}`)})
	var problem *client.ProblemError
	switch {
	case err == nil:
		fmt.Println("done:", resp.Status)
	case errors.Is(err, client.ErrFingerprintMismatch):
		// Nothing ran for this request; the key belongs to another one.
		errors.As(err, &problem)
		fmt.Println("key reused for a different request; new key safe:", problem.NewKeySafe)
	case errors.Is(err, client.ErrGaveUp):
		fmt.Println("outcome unknown; retry later with the same key")
	case errors.Is(err, client.ErrNotExecuted):
		fmt.Println("refused before anything ran; retry later with the same key")
	case errors.As(err, &problem):
		fmt.Println("final answer:", problem.Status, problem.Title)
	default:
		fmt.Println("not sent:", err)
	}
	// Output:
	// key reused for a different request; new key safe: true
}

// ExampleParseRegions gives the client every region of a deployment, as
// `idemd dev` prints them (IDEMCOORD_REGIONS): an attempt that proves
// nothing ran in one region is retried in the next at once, and the
// region the last answer named as the owner is tried first.
func ExampleParseRegions() {
	regions, err := client.ParseRegions("us-east=http://127.0.0.1:7101,eu-west=http://127.0.0.1:7102,ap-south=http://127.0.0.1:7103")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.New(client.Config{Regions: regions, Token: "example-token"}); err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range regions {
		fmt.Println(r.Name, r.URL)
	}
	// Output:
	// us-east http://127.0.0.1:7101
	// eu-west http://127.0.0.1:7102
	// ap-south http://127.0.0.1:7103
}
