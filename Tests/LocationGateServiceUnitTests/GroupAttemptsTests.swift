import Testing

@testable import LocationGateService

/// One group's transactions as event → action sequences: which requests each attempt appends
/// after a refusal, a race, a missing partition or a failure, and what each request is answered.
/// Requests are indexes into the group; a committed request's result is its name. The same
/// rules against PostgreSQL are in `GroupCommitTests` and `IsolationTests`.
@Suite("Group commit's attempts: a refused or faulty request fails alone, the others commit", .timeLimit(.minutes(1)))
struct GroupAttemptsTests {
    /// An action in a form tests compare: outcomes as the result's name or the error's text.
    enum Step: Equatable {
        case append([Int])
        case createPartitions
        case finish([String])
    }

    struct TestError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func step(_ action: GroupAttempts<String>.Action) -> Step {
        switch action {
        case .append(let requests):
            return .append(requests)
        case .createPartitions:
            return .createPartitions
        case .finish(let outcomes):
            return .finish(outcomes.map { outcome in
                switch outcome {
                case .success(let name): name
                case .failure(let error): "\(error)"
                }
            })
        }
    }

    @Test("A group that commits answers each request with its own result")
    func commits() {
        var attempts = GroupAttempts<String>(requests: 3)
        #expect(Self.step(attempts.start()) == .append([0, 1, 2]))
        #expect(Self.step(attempts.appended(["a", "b", "c"])) == .finish(["a", "b", "c"]))
        #expect(attempts.isolations == 0)
    }

    @Test("A refused request fails alone with its own error; the others are appended again in a new transaction")
    func refusedRequestFailsAlone() {
        var attempts = GroupAttempts<String>(requests: 3)
        #expect(Self.step(attempts.start()) == .append([0, 1, 2]))
        #expect(Self.step(attempts.failed(TestError("versionConflict"), .refused(position: 1))) == .append([0, 2]))
        // Positions are in the attempt's requests: position 1 of [0, 2] is request 2.
        #expect(Self.step(attempts.failed(TestError("ruleViolation"), .refused(position: 1))) == .append([0]))
        #expect(Self.step(attempts.appended(["a"])) == .finish(["a", "versionConflict", "ruleViolation"]))
    }

    @Test("After the second refusal the rest is split in halves, appended in order, each with a budget of its own")
    func secondRefusalSplitsInHalves() {
        var attempts = GroupAttempts<String>(requests: 7)
        #expect(Self.step(attempts.start()) == .append([0, 1, 2, 3, 4, 5, 6]))
        #expect(Self.step(attempts.failed(TestError("refused 0"), .refused(position: 0))) == .append([1, 2, 3, 4, 5, 6]))
        #expect(Self.step(attempts.failed(TestError("refused 1"), .refused(position: 0))) == .append([2, 3]))
        // The first half's own first refusal appends the rest of that half again.
        #expect(Self.step(attempts.failed(TestError("refused 2"), .refused(position: 0))) == .append([3]))
        #expect(Self.step(attempts.appended(["d"])) == .append([4, 5, 6]))
        #expect(Self.step(attempts.appended(["e", "f", "g"])) == .finish(["refused 0", "refused 1", "refused 2", "d", "e", "f", "g"]))
    }

    @Test("200 requests, every other one refused: each fails alone, in O(n log n) request-appends rather than a replay of the rest per refusal")
    func refusalsAreNotQuadratic() {
        var attempts = GroupAttempts<String>(requests: 200)
        var action = attempts.start()
        var appended = 0
        while case .append(let requests) = action {
            appended += requests.count
            if let refused = requests.firstIndex(where: { $0 % 2 == 1 }) {
                action = attempts.failed(TestError("refused \(requests[refused])"), .refused(position: refused))
            } else {
                action = attempts.appended(requests.map { "appended \($0)" })
            }
        }
        #expect(Self.step(action) == .finish((0..<200).map { $0 % 2 == 0 ? "appended \($0)" : "refused \($0)" }))
        // Replaying the rest after each refusal would cost 200 + 199 + ... + 101, over 15,000.
        #expect(appended < 5_000, "\(appended) request-appends for 200 requests")
    }

    @Test("A unique violation appends the same requests again, twice at most; a third isolates them")
    func uniqueRaces() {
        var attempts = GroupAttempts<String>(requests: 2)
        #expect(Self.step(attempts.start()) == .append([0, 1]))
        #expect(Self.step(attempts.failed(TestError("23505"), .uniqueRace)) == .append([0, 1]))
        #expect(Self.step(attempts.failed(TestError("23505"), .uniqueRace)) == .append([0, 1]))
        #expect(Self.step(attempts.failed(TestError("23505"), .uniqueRace)) == .append([0]))
        #expect(attempts.isolations == 1)
        #expect(Self.step(attempts.appended(["a (duplicate)"])) == .append([1]))
        #expect(Self.step(attempts.appended(["b"])) == .finish(["a (duplicate)", "b"]))
    }

    @Test("A missing partition creates the partitions and appends again; when creating them fails, so do the requests")
    func missingPartition() {
        var attempts = GroupAttempts<String>(requests: 2)
        #expect(Self.step(attempts.start()) == .append([0, 1]))
        #expect(Self.step(attempts.failed(TestError("no partition"), .missingPartition)) == .createPartitions)
        #expect(Self.step(attempts.partitionsCreated()) == .append([0, 1]))
        #expect(Self.step(attempts.appended(["a", "b"])) == .finish(["a", "b"]))

        var failing = GroupAttempts<String>(requests: 2)
        #expect(Self.step(failing.start()) == .append([0, 1]))
        #expect(Self.step(failing.failed(TestError("no partition"), .missingPartition)) == .createPartitions)
        #expect(Self.step(failing.partitionsFailed(TestError("connection lost"))) == .finish(["connection lost", "connection lost"]))
    }

    @Test("A failure of several requests that is not an outage appends each on its own, so the one at fault fails alone")
    func isolation() {
        var attempts = GroupAttempts<String>(requests: 3)
        #expect(Self.step(attempts.start()) == .append([0, 1, 2]))
        #expect(Self.step(attempts.failed(TestError("22P02"), .other)) == .append([0]))
        #expect(attempts.isolations == 1)
        #expect(Self.step(attempts.appended(["a"])) == .append([1]))
        // Alone, a failure is the request's own.
        #expect(Self.step(attempts.failed(TestError("22P02"), .other)) == .append([2]))
        #expect(Self.step(attempts.appended(["c"])) == .finish(["a", "22P02", "c"]))
        #expect(attempts.isolations == 1)
    }

    @Test("An outage fails every request the transaction held, and nothing is appended again")
    func outage() {
        var attempts = GroupAttempts<String>(requests: 3)
        #expect(Self.step(attempts.start()) == .append([0, 1, 2]))
        #expect(Self.step(attempts.failed(TestError("57P01"), .outage)) == .finish(["57P01", "57P01", "57P01"]))
        #expect(attempts.isolations == 0)
    }
}
