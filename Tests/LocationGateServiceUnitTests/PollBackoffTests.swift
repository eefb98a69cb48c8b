import Testing
@testable import LocationGateService

/// Waits on the database back off: a request waiting two seconds polls a few dozen times, not
/// four hundred (one every 5 ms, as before).
@Suite("PollBackoff", .timeLimit(.minutes(1)))
struct PollBackoffTests {
    @Test("Pauses double from 5 ms up to 100 ms; two seconds of patience is at most 30 polls")
    func backsOff() {
        let pauses = Array(PollBackoff().prefix(8))
        #expect(pauses == [.milliseconds(5), .milliseconds(10), .milliseconds(20), .milliseconds(40), .milliseconds(80),
                           .milliseconds(100), .milliseconds(100), .milliseconds(100)])
        #expect(PollBackoff.polls(in: .seconds(2)) <= 30)
        #expect(PollBackoff.polls(in: .seconds(2), first: .milliseconds(10)) <= 30)
    }
}
