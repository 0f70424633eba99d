package patronistore

import (
	"cmp"
	"slices"

	"github.com/idemcoord/idemcoord/store"
)

// sortFences orders rows by shard.
func sortFences(rows []store.FenceRow) {
	slices.SortFunc(rows, func(a, b store.FenceRow) int { return cmp.Compare(a.Shard, b.Shard) })
}
