package main

import (
	"slices"
	"testing"

	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestOpenAPIListsEveryProblemTypeOfTheContract: the problem types
// idemctl openapi documents are those of docs/http-contract.md's list
// (which gateway's TestTheContractListsEveryProblemType holds to the
// gateway's source), so a client generated from the document knows every
// type the gateway answers.
func TestOpenAPIListsEveryProblemTypeOfTheContract(t *testing.T) {
	listed := testutil.ContractProblemTypes(t, "../../docs/http-contract.md")
	for _, name := range listed {
		if !slices.Contains(problemTypes, name) {
			t.Errorf("problem type %q of docs/http-contract.md is not in idemctl openapi's problemTypes", name)
		}
	}
	for _, name := range problemTypes {
		if !slices.Contains(listed, name) {
			t.Errorf("idemctl openapi documents problem type %q, which docs/http-contract.md does not list", name)
		}
	}
}
