package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIListsEveryProblemTypeOfTheContract: the problem types
// idemctl openapi documents are those of docs/http-contract.md's list
// (which gateway's TestTheContractListsEveryProblemType holds to the
// gateway's source), so a client generated from the document knows every
// type the gateway answers.
func TestOpenAPIListsEveryProblemTypeOfTheContract(t *testing.T) {
	doc, err := os.ReadFile("../../docs/http-contract.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(doc), "\nProblem types: ")
	if !ok {
		t.Fatal(`docs/http-contract.md has no "Problem types: " list`)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(list, -1) {
		listed = append(listed, m[1])
	}
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
