package ledger_test

import (
	"os"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
