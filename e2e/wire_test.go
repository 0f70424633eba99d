package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/gateway"
)

// requestTimeout bounds one HTTP exchange with a gateway: longer than the
// dev cluster's 10 s upstream timeout, so the gateway always answers first.
const requestTimeout = 20 * time.Second

// httpClient is every test's client: many idle connections per host, so 64
// concurrent requests do not queue behind each other, and redirects are
// returned, not followed.
var httpClient = &http.Client{
	Timeout: requestTimeout,
	Transport: func() http.RoundTripper {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 128
		return t
	}(),
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// reply is one answer, read in full.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// replayed reports Idempotent-Replayed: true.
func (r reply) replayed() bool { return r.Header.Get(gateway.HeaderReplayed) == "true" }

// opID is the X-Idempotency-Operation-Id header.
func (r reply) opID() string { return r.Header.Get(gateway.HeaderOperationID) }

func (r reply) String() string {
	b := r.Body
	if len(b) > 300 {
		b = b[:300]
	}
	return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(b))
}

// problem is the contract's application/problem+json body.
type problem struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail"`
	OperationID    string `json:"operation_id"`
	OperationState string `json:"operation_state"`
	NewKeySafe     bool   `json:"new_key_safe"`
}

// problem decodes the body as a problem document, failing the test if the
// answer is not one.
func (r reply) problem(t *testing.T) problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("answer %v: Content-Type %q; want application/problem+json", r, ct)
	}
	var p problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Errorf("answer %v: not a problem document: %v", r, err)
	}
	return p
}

// retryAfter returns the Retry-After seconds, or -1 if absent or malformed.
func (r reply) retryAfter() int {
	n, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// receipt is the demo payments service's 201 body.
type receipt struct {
	PaymentID string `json:"payment_id"`
	Amount    string `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
	Status    string `json:"status"`
}

func (r reply) receipt(t *testing.T) receipt {
	t.Helper()
	var rc receipt
	if err := json.Unmarshal(r.Body, &rc); err != nil || rc.PaymentID == "" {
		t.Errorf("answer %v: not a payment receipt (%v)", r, err)
	}
	return rc
}

// paymentBody is a POST /v1/payments body.
func paymentBody(amount, reference string) []byte {
	b, err := json.Marshal(map[string]string{"amount": amount, "currency": "EUR", "reference": reference})
	if err != nil {
		panic(err)
	}
	return b
}

// send makes one request. header values are set as given (no
// canonicalisation of the value, no quoting).
func send(ctx context.Context, method, target, token string, header map[string]string, body []byte) (reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return reply{}, fmt.Errorf("reading a %d answer: %w", res.StatusCode, err)
	}
	return reply{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// postPayment POSTs body to base/v1/payments under key.
func postPayment(ctx context.Context, base, token, key string, body []byte) (reply, error) {
	return send(ctx, http.MethodPost, base+"/v1/payments", token, map[string]string{gateway.HeaderKey: key}, body)
}

// mustPost is postPayment that fails the test on a transport error.
func mustPost(t *testing.T, base, token, key string, body []byte) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	r, err := postPayment(ctx, base, token, key, body)
	if err != nil {
		t.Fatalf("POST %s/v1/payments: %v", base, err)
	}
	return r
}

// getOperation is GET /v1/operations/{id} as the token's actor.
func getOperation(t *testing.T, base, token, opID string) (reply, operation) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	r, err := send(ctx, http.MethodGet, base+"/v1/operations/"+url.PathEscape(opID), token, nil, nil)
	if err != nil {
		t.Fatalf("GET operation: %v", err)
	}
	var op operation
	if r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body, &op); err != nil {
			t.Errorf("GET operation %s: %v in %v", opID, err, r)
		}
	}
	return r, op
}

// operation is the body of GET /v1/operations/{id}.
type operation struct {
	OperationID string `json:"operation_id"`
	State       string `json:"state"`
	Attempts    int    `json:"attempts"`
	Response    *struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"response"`
}

// rawExchange writes a request byte for byte over a new TCP connection and
// reads the answer: for header values Go's client refuses to send (control
// characters). headerLines are written as given, each ended by CRLF.
func rawExchange(t *testing.T, base string, method, path string, headerLines []string, body []byte) reply {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", u.Host, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(requestTimeout))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, path, u.Host)
	for _, h := range headerLines {
		req.WriteString(h + "\r\n")
	}
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatalf("raw write: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("raw read: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("raw read body: %v", err)
	}
	return reply{Status: res.StatusCode, Header: res.Header, Body: b}
}

// token signs a token for actor on c, valid for the whole test.
func token(t *testing.T, c *devcluster.Cluster, actor string) string {
	t.Helper()
	tok, err := c.Token(actor, time.Hour)
	if err != nil {
		t.Fatalf("token for %s: %v", actor, err)
	}
	return tok
}

// scope is the actor scope a dev cluster token for actor carries.
func scope(actor string) string { return "demo/" + actor }

// uniqueName returns prefix followed by the current time in nanoseconds:
// actors and keys that no earlier test of the shared cluster used.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}
