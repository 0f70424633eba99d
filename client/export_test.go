package client

import (
	"context"
	"time"
)

// AnswerTimeout is the response-header timeout an attempt of in gets
// under cfg, for tests.
func AnswerTimeout(cfg Config, in Intent) time.Duration {
	c := &Client{cfg: cfg.withDefaults()}
	return c.answerWait(context.Background(), in, "").d
}

// StallProbed reports whether an attempt of c to its first region gets a
// stall probe (Config.StallProbe).
func StallProbed(c *Client) bool {
	return c.answerWait(context.Background(), Intent{}, c.stallHealthz(c.regions.list[0])).stall > 0
}
