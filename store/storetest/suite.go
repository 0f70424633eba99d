package storetest

import (
	"testing"
)

// Run runs the conformance suite against the backend h opens: every test
// of the store contract, each a subtest named as the test was when it was
// written against the SQL store (go test -run 'TestStore/TestName'). A
// backend passes when every subtest does, on a real database.
func Run(t *testing.T, h Harness) {
	s := suite{h}
	for _, tc := range s.tests() {
		t.Run(tc.name, tc.run)
	}
}

// tests lists the suite, by file (what it covers).
func (h suite) tests() []struct {
	name string
	run  func(*testing.T)
} {
	return []struct {
		name string
		run  func(*testing.T)
	}{
		// claim.go
		{"TestBeginFirstRunThenReplay", h.TestBeginFirstRunThenReplay},
		{"TestConcurrentClaimsOneWinner", h.TestConcurrentClaimsOneWinner},
		{"TestFingerprintMismatchLeavesRecordUnchanged", h.TestFingerprintMismatchLeavesRecordUnchanged},
		{"TestScopesAreIndependent", h.TestScopesAreIndependent},
		{"TestStaleEpochRefused", h.TestStaleEpochRefused},
		// takeover.go
		{"TestTakeoverAfterLeaseExpiry", h.TestTakeoverAfterLeaseExpiry},
		{"TestLeaseExpiresExactlyAtExpiry", h.TestLeaseExpiresExactlyAtExpiry},
		{"TestRetryableFailureIsRerun", h.TestRetryableFailureIsRerun},
		{"TestOutcomeUnknownIsNeverRerun", h.TestOutcomeUnknownIsNeverRerun},
		{"TestResolveOutcomeUnknown", h.TestResolveOutcomeUnknown},
		{"TestReleaseRecordsNotSentThroughALeaseThatIsBehind", h.TestReleaseRecordsNotSentThroughALeaseThatIsBehind},
		{"TestReconcileUnknownIsAudited", h.TestReconcileUnknownIsAudited},
		// members.go
		{"TestMemberDigestsAreStoredWithTheRecordAndNamedOnAMismatch", h.TestMemberDigestsAreStoredWithTheRecordAndNamedOnAMismatch},
		// window.go
		{"TestNothingIsTakenOverPastTheDownstreamWindow", h.TestNothingIsTakenOverPastTheDownstreamWindow},
		{"TestReconcilePastWindowSettlesOnlyWhatTheGuardLeaves", h.TestReconcilePastWindowSettlesOnlyWhatTheGuardLeaves},
		// adopt.go
		{"TestTakenOverLeaseAdoptsNothing", h.TestTakenOverLeaseAdoptsNothing},
		// attempt.go
		{"TestStagesBelongToTheirAttempt", h.TestStagesBelongToTheirAttempt},
		// ambiguous.go
		{"TestAmbiguousClaim", h.TestAmbiguousClaim},
		{"TestAmbiguousFinish", h.TestAmbiguousFinish},
		{"TestAnotherWritersChangeIsNeverTakenForALostWrite", h.TestAnotherWritersChangeIsNeverTakenForALostWrite},
		// fence.go
		{"TestBootstrapFencesGivesEveryShardItsHomeOwnerOnce", h.TestBootstrapFencesGivesEveryShardItsHomeOwnerOnce},
		{"TestBootstrapFencesRefusesAnotherShardCount", h.TestBootstrapFencesRefusesAnotherShardCount},
		{"TestMoveFenceIsACompareAndSwapOnTheOldEpoch", h.TestMoveFenceIsACompareAndSwapOnTheOldEpoch},
		{"TestConcurrentMovesOfOneShardOneWins", h.TestConcurrentMovesOfOneShardOneWins},
		// unowned.go
		{"TestUnownedShardAdmitsNobody", h.TestUnownedShardAdmitsNobody},
		{"TestUpdateOnAShardThatLostItsOwnerIsRefused", h.TestUpdateOnAShardThatLostItsOwnerIsRefused},
		// fenced.go
		{"TestAFencedOutHolderIsTakenOverAtOnceOnlyWhereAllowed", h.TestAFencedOutHolderIsTakenOverAtOnceOnlyWhereAllowed},
		{"TestFencedFindsOnlyRunningOperationsOfAnOlderEpoch", h.TestFencedFindsOnlyRunningOperationsOfAnOlderEpoch},
		// firstsent.go
		{"TestAnotherFirstSentIsAMismatchUnlessEitherIsAbsent", h.TestAnotherFirstSentIsAMismatchUnlessEitherIsAbsent},
		{"TestKeepStagesResumesARetryableFailureFromItsLastStage", h.TestKeepStagesResumesARetryableFailureFromItsLastStage},
		{"TestAResultsStageIsTheRecoveryPointWhicheverPathRecordsIt", h.TestAResultsStageIsTheRecoveryPointWhicheverPathRecordsIt},
		// resolve_ttl.go
		{"TestResolvedAfterTTLStaysForAnotherTTL", h.TestResolvedAfterTTLStaysForAnotherTTL},
		// cleanup.go
		{"TestCleanupExpiryBoundary", h.TestCleanupExpiryBoundary},
		{"TestCleanupDeletesOnlyRestingStates", h.TestCleanupDeletesOnlyRestingStates},
		{"TestCleanupBatches", h.TestCleanupBatches},
		// purge.go
		{"TestPurgeSticksThroughLaterFinishAndResolve", h.TestPurgeSticksThroughLaterFinishAndResolve},
		{"TestFinishStoresBodyOfUnpurgedRecord", h.TestFinishStoresBodyOfUnpurgedRecord},
		// queue.go
		{"TestStrandedAsyncOperationIsTakenOverByOneInstance", h.TestStrandedAsyncOperationIsTakenOverByOneInstance},
		{"TestPurgeDeletesQueuedRequests", h.TestPurgeDeletesQueuedRequests},
		// stranded.go
		{"TestStrandedOffersOnlyWhatTheCallerMayRunAndPagesOn", h.TestStrandedOffersOnlyWhatTheCallerMayRunAndPagesOn},
		// cancel.go
		{"TestCancelIsAVersionConditionedTerminalWrite", h.TestCancelIsAVersionConditionedTerminalWrite},
		{"TestCancelIsFenced", h.TestCancelIsFenced},
		{"TestCleanupDeletesExpiredCancelledRecords", h.TestCleanupDeletesExpiredCancelledRecords},
		// audit.go
		{"TestQueryAuditFiltersBySinceAndShardWithoutPrefixCollisions", h.TestQueryAuditFiltersBySinceAndShardWithoutPrefixCollisions},
		{"TestAuditRequiresOperatorAndReason", h.TestAuditRequiresOperatorAndReason},
		// admin.go
		{"TestAuditedCleanupRecordsTheDeletionInItsTransaction", h.TestAuditedCleanupRecordsTheDeletionInItsTransaction},
		{"TestActorScopesFindsScopesBySubject", h.TestActorScopesFindsScopesBySubject},
		// ledger.go
		{"TestTheLedgerReadsAndWritesIncidentEventsAlike", h.TestTheLedgerReadsAndWritesIncidentEventsAlike},
	}
}
