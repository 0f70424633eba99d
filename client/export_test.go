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
