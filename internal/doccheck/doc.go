// Package doccheck holds the tests that keep the project's documents
// honest about the code: every document a comment or a document cites
// ships with the repository, and every test docs/architecture.md names
// exists. It has no non-test code besides this file.
package doccheck
