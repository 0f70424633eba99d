package failover_test

import (
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/store"
)

// TestErrNoOperatorIsTheStoresError checks that a repair refused for a
// missing operator or reason matches errors.Is under either package's
// name, whichever layer (the failover repair or the store's audit)
// refused it.
func TestErrNoOperatorIsTheStoresError(t *testing.T) {
	for _, c := range []struct {
		name      string
		err, want error
	}{
		{"failover's is store's", failover.ErrNoOperator, store.ErrNoOperator},
		{"store's is failover's", store.ErrNoOperator, failover.ErrNoOperator},
		{"wrapped failover's is store's", errorsJoin(failover.ErrNoOperator), store.ErrNoOperator},
		{"wrapped store's is failover's", errorsJoin(store.ErrNoOperator), failover.ErrNoOperator},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: errors.Is(%v, %v) = false", c.name, c.err, c.want)
		}
	}
}

func errorsJoin(err error) error { return errors.Join(errors.New("repair refused"), err) }
