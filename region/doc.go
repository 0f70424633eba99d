// Package region is the deployment's topology: the regions, their gateway
// URLs and failover order, and the home region of every shard.
//
// A shard's home region is a pure function of the shard number and the
// topology: Home(shard) = Names()[shard % len(Names())], in the order the
// configuration lists the regions. It depends on nothing that changes at
// run time, so every instance, the CockroachDB layout (whose computed
// crdb_region column uses the same modulo) and the bootstrap of the
// ownership directory agree on it. In steady state a shard's owner is its
// home; during a failover the owner is the first healthy region in the
// home's successor order.
package region
