// Package scenario reads drill scenarios: YAML files that name a workload
// (traffic), a fault spec (failpoints) and the failover policy under test.
// The shipped scenarios (scenarios/*.yaml) are embedded in the binary;
// Parse reads any other file with the same schema. Every mistake is
// reported with its YAML path ("faults.kinds[1]: unknown fault kind").
package scenario
