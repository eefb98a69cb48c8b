@testable import EventLog
import Foundation
import LocationAuthorization
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing
@testable import LocationGateService

@Suite("Group commit: concurrent small appends share transactions and fail alone", .timeLimit(.minutes(3)))
struct GroupCommitTests {
    @Test("60 concurrent one-event appends to one device: versions 1...n, each once; conflicting ones fail alone")
    func concurrentAppends() async throws {
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        func submission(expectedVersion: Int64? = nil) -> EventSubmission {
            EventSubmission(
                id: UUID(), userId: "u", deviceId: "d", occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                event: .appStateChanged(.foreground, backgroundIndicator: false), expectedVersion: expectedVersion)
        }
        let outcomes = await withTaskGroup(of: Result<Int64, ServiceError>.self) { group in
            for index in 0..<60 {
                group.addTask {
                    do {
                        // Every tenth request expects a version the stream can never be at.
                        let results = try await service.events.ingest(appID: appID, submissions: [submission(expectedVersion: index % 10 == 0 ? 10_000 : nil)])
                        return .success(results[0].version)
                    } catch {
                        return .failure(error as? ServiceError ?? ServiceError(.internalError, "\(error)"))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let versions = outcomes.compactMap { try? $0.get() }.sorted()
        let failures = outcomes.compactMap { if case .failure(let error) = $0 { error } else { nil } }
        #expect(versions == Array(1...54))
        #expect(failures.count == 6 && failures.allSatisfy { $0.code == .versionConflict })
        #expect(try await service.log.version(of: StreamKey(appID: appID, userID: "u", deviceID: "d")) == 54)
        await pool.close()
    }

    @Test("Concurrent appends with rule violations and retried ids: refused ones fail alone, a retry is a duplicate")
    func rejectionsAndRetries() async throws {
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        // Each device: a request, then (concurrently) its answer twice with the same id, and an
        // answer for a device with no prompt on screen (noPromptPending).
        let ids = (0..<20).map { _ in UUID() }
        for device in 0..<20 {
            _ = try await service.events.ingest(appID: appID, submissions: [EventSubmission(
                id: UUID(), userId: "u", deviceId: "d\(device)", occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                event: .authorizationRequested(.whenInUse))])
        }
        enum Kind: Sendable { case answer(Int), refused(Int) }
        let outcomes = await withTaskGroup(of: (Kind, Result<EventResult, ServiceError>).self) { group in
            for device in 0..<20 {
                for kind in [Kind.answer(device), .answer(device), .refused(device)] {
                    group.addTask {
                        let submission: EventSubmission
                        switch kind {
                        case .answer(let device):
                            submission = EventSubmission(
                                id: ids[device], userId: "u", deviceId: "d\(device)", occurredAt: Date(timeIntervalSince1970: 1_795_341_601),
                                event: .promptResponded(.allowWhileUsing))
                        case .refused(let device):
                            submission = EventSubmission(
                                id: UUID(), userId: "u", deviceId: "other\(device)", occurredAt: Date(timeIntervalSince1970: 1_795_341_601),
                                event: .promptResponded(.allowWhileUsing))
                        }
                        do {
                            return (kind, .success(try await service.events.ingest(appID: appID, submissions: [submission])[0]))
                        } catch {
                            return (kind, .failure(error as? ServiceError ?? ServiceError(.internalError, "\(error)")))
                        }
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for device in 0..<20 {
            let answers = outcomes.compactMap { kind, result -> EventResult? in
                if case .answer(device) = kind { return try? result.get() }
                return nil
            }
            // Both submissions of the same id succeed: one stored it, the other is its duplicate.
            #expect(answers.count == 2)
            #expect(answers.filter { $0.duplicate }.count == 1)
            #expect(answers.allSatisfy { $0.version == 2 && $0.status == AuthorizationStatus.authorizedWhenInUse })
            let refused = outcomes.compactMap { kind, result -> ServiceError? in
                if case .refused(device) = kind, case .failure(let error) = result { return error }
                return nil
            }
            #expect(refused.count == 1 && refused.first?.code == .ruleViolation)
            #expect(try await service.log.version(of: StreamKey(appID: appID, userID: "u", deviceID: "d\(device)")) == 2)
            #expect(try await service.log.version(of: StreamKey(appID: appID, userID: "u", deviceID: "other\(device)")) == 0)
        }
        await pool.close()
    }

    @Test("A group stuck behind a stream's lock does not hold up appends to other streams")
    func stuckGroupDoesNotHoldUpOthers() async throws {
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        func submission(_ device: String) -> EventSubmission {
            EventSubmission(
                id: UUID(), userId: "u", deviceId: device, occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                event: .appStateChanged(.foreground, backgroundIndicator: false))
        }
        // Another transaction holds the stream's append lock, as a long append would, until the
        // test lets it go; a group waits for it before the other appends start, so that none of
        // them shares its group.
        let locked = TestLatch(), release = TestLatch()
        defer { release.raise() }
        let (holder, stuck, blocker) = try await Self.holdGroup(service, pool, appID: appID, locked: locked, release: release)
        let spills = service.events.committer.spills
        // The first group waits for the lock; these are queued behind it, and a second group
        // takes them once they have waited. They are all appended while the lock is still held,
        // so none of them waited for the stuck group.
        for device in 0..<5 {
            let result = try await service.events.ingest(appID: appID, submissions: [submission("free\(device)")])
            #expect(result[0].version == 1)
        }
        #expect(service.events.committer.spills > spills, "no drainer was started beside the stuck one")
        release.raise()
        let (stuckResult, afterRelease) = try await stuck.value
        #expect(stuckResult[0].version == 1)
        #expect(afterRelease, "the held stream was appended before its lock was free")
        try await holder.value
        await blocker.close()
        await pool.close()
    }

    @Test("A device state written without the stream's lock after the append read it absent: the append's insert meets it, and the append runs again as an upsert")
    func deviceStateRace() async throws {
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        func submission(_ device: String, _ event: LocationEvent) -> EventSubmission {
            EventSubmission(id: UUID(), userId: "u", deviceId: device, occurredAt: Date(timeIntervalSince1970: 1_795_341_600), event: event)
        }
        // One request with a device the log has and one it has not: an insert and an upsert.
        _ = try await service.events.ingest(appID: appID, submissions: [submission("known", .authorizationRequested(.whenInUse))])
        let mixed = try await service.events.ingest(appID: appID, submissions: [
            submission("known", .promptResponded(.allowWhileUsing)), submission("new", .authorizationRequested(.whenInUse)),
        ])
        #expect(mixed.map(\.version) == [2, 1])
        // A replay's rebuild writes device states without the streams' locks: its uncommitted
        // row is invisible to the append's read, so the append inserts the device and waits on
        // the row's unique index entry until the rebuild commits.
        let written = TestLatch(), release = TestLatch()
        defer { release.raise() }
        let blocker = try await TestDatabase.pool(size: 1)
        let rebuild = Task {
            try await blocker.transaction { connection in
                try connection.query(
                    """
                    INSERT INTO device_states (app_id, user_id, device_id, version, state, status, provisional, milestones)
                    VALUES (\(appID), 'u', 'raced', 0, \(DeviceState().storedJSON)::jsonb, \(DeviceState().status.rawValue), false, 0)
                    """)
                written.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { written.isRaised })
        let attempted = service.events.committer.requestsAttempted
        let append = Task { try await service.events.ingest(appID: appID, submissions: [submission("raced", .authorizationRequested(.always))]) }
        #expect(try await waitUntil {
            try await pool.query("SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted")
                .first?.decode(0, as: Int64.self) == 1
        })
        release.raise()
        try await rebuild.value
        let results = try await append.value
        #expect(results.map(\.version) == [1])
        #expect(service.events.committer.requestsAttempted - attempted == 2, "the append ran once, refused by the unique index, and again")
        let rows = try await pool.query(
            "SELECT device_id, version, status FROM device_states WHERE app_id = \(appID) ORDER BY device_id")
        let stored = try rows.map { "\(try $0.decode(0, as: String.self)) \(try $0.decode(1, as: Int64.self)) \(try $0.decode(2, as: String.self))" }
        #expect(stored == ["known 2 authorizedWhenInUse", "new 1 notDetermined", "raced 1 notDetermined"])
        #expect(try await service.log.version(of: StreamKey(appID: appID, userID: "u", deviceID: "raced")) == 1)
        await blocker.close()
        await pool.close()
    }

    @Test("An attempt of an append starts at the projector's read: what a rolled-back attempt projected is not handed to the cache or the answer")
    func projectorForgetsRolledBackAttempt() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let appID = try await TestDatabase.makeApp(pool)
        let event = LocationEvent.appStateChanged(.foreground, backgroundIndicator: false)
        let projector = DeviceProjector(events: [event])
        let new = NewEvent(
            id: UUID(), userID: "u", deviceID: "d", type: event.type.rawValue, data: event.dataJSON,
            occurredAt: Date(timeIntervalSince1970: 1_795_341_600), expectedVersion: nil)
        struct RolledBack: Error {}
        await #expect(throws: RolledBack.self) {
            try await pool.transaction { connection -> Void in
                _ = try EventLog.appendInTransaction(appID: appID, events: [new], projector: projector, on: connection)
                throw RolledBack()
            }
        }
        #expect(projector.states.count == 1 && projector.outcomes.allSatisfy { $0 != nil })
        // The next attempt reads first: the rolled-back state and outcome are gone.
        _ = projector.read([StreamKey(appID: appID, userID: "u", deviceID: "d")])
        #expect(projector.states.isEmpty && projector.outcomes.allSatisfy { $0 == nil })
        #expect(try await pool.query("SELECT count(*) FROM device_states WHERE app_id = \(appID)").first?.decode(0, as: Int64.self) == 0)
        await pool.close()
    }


    /// returns once a group of `service` waits for it: the requests made after that queue. The
    /// stuck append notes whether the lock had been let go when it was acknowledged.
    static func holdGroup(
        _ service: GateService, _ pool: PostgresConnectionPool, appID: UUID, locked: TestLatch, release: TestLatch
    ) async throws -> (
        holder: Task<Void, any Error>, stuck: Task<([EventResult], releasedFirst: Bool), any Error>, blocker: PostgresConnectionPool
    ) {
        let held = StreamKey(appID: appID, userID: "u", deviceID: "held")
        let blocker = try await TestDatabase.pool(size: 1)
        let holder = Task {
            try await blocker.transaction { connection in
                try connection.query("SELECT pg_advisory_xact_lock(\(held.lockKey))")
                locked.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { locked.isRaised })
        let stuck = Task {
            let results = try await service.events.ingest(appID: appID, submissions: [EventSubmission(
                id: UUID(), userId: "u", deviceId: "held", occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                event: .appStateChanged(.foreground, backgroundIndicator: false))])
            return (results, releasedFirst: release.isRaised)
        }
        // Its group is waiting for the lock (an advisory lock's key is classid:objid).
        let high = Int64(UInt32(truncatingIfNeeded: held.lockKey >> 32)), low = Int64(UInt32(truncatingIfNeeded: held.lockKey))
        #expect(try await waitUntil {
            try await pool.query(
                """
                SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted AND classid::bigint = \(high) AND objid::bigint = \(low)
                """).first?.decode(0, as: Int64.self) == 1
        })
        return (holder, stuck, blocker)
    }

    @Test("A group of 200 requests, every other one refused: each fails alone, and the refusals cost O(n log n) request-appends, not one replay of the group each")
    func refusalsAreNotQuadratic() async throws {
        let pool = try await TestDatabase.pool(size: 4)
        let service = GateService(pool: pool, logger: TestDatabase.logger, groupCommits: 1)
        let appID = try await TestDatabase.makeApp(pool)
        let locked = TestLatch(), release = TestLatch()
        defer { release.raise() }
        let (holder, stuck, blocker) = try await Self.holdGroup(service, pool, appID: appID, locked: locked, release: release)
        let before = service.events.committer.requestsAttempted
        let requests = Task {
            await withTaskGroup(of: (Int, Result<Int64, ServiceError>).self) { group in
                for index in 0..<200 {
                    group.addTask {
                        do {
                            let result = try await service.events.ingest(appID: appID, submissions: [EventSubmission(
                                id: UUID(), userId: "u", deviceId: "d\(index)", occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                                event: .appStateChanged(.foreground, backgroundIndicator: false),
                                expectedVersion: index % 2 == 0 ? 0 : 7)])
                            return (index, .success(result[0].version))
                        } catch {
                            return (index, .failure(error as? ServiceError ?? ServiceError(.internalError, "\(error)")))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        // All 200 wait behind the stuck group, so that the next group holds them all.
        #expect(try await waitUntil(timeout: .seconds(30)) { service.health.statistics.queuedEvents == 200 })
        release.raise()
        let outcomes = await requests.value
        _ = try await stuck.value
        try await holder.value
        for (index, outcome) in outcomes {
            switch outcome {
            case .success(let version): #expect(index % 2 == 0 && version == 1)
            case .failure(let error): #expect(index % 2 == 1 && error.code == .versionConflict, "\(index): \(error)")
            }
        }
        // Replaying the rest of the group after each refusal costs 200 + 199 + ... + 100, about
        // 15,000; halving after the second refusal, about 2 × 200 × log2(200) (3,100).
        let cost = service.events.committer.requestsAttempted - before
        #expect(cost < 5_000, "\(cost) request-appends for 200 requests")
        await blocker.close()
        await pool.close()
    }

    @Test("One app may hold a quarter of the queue: beyond it its requests are 503 overloaded, another app's still queue and commit")
    func perAppShareOfTheQueue() async throws {
        let pool = try await TestDatabase.pool(size: 4)
        // A queue of 4,000 events: 1,000 for one app at most.
        let service = GateService(pool: pool, logger: TestDatabase.logger, maxQueuedEvents: 4_000, groupCommits: 1)
        let noisy = try await TestDatabase.makeApp(pool, name: "noisy")
        let quiet = try await TestDatabase.makeApp(pool, name: "quiet")
        let locked = TestLatch(), release = TestLatch()
        defer { release.raise() }
        let (holder, stuck, blocker) = try await Self.holdGroup(service, pool, appID: noisy, locked: locked, release: release)
        func batch(_ device: String) -> [EventSubmission] {
            (0..<100).map { minute in
                EventSubmission(
                    id: UUID(), userId: "u", deviceId: device, occurredAt: Date(timeIntervalSince1970: 1_795_341_600 + Double(minute)),
                    event: .appStateChanged(minute % 2 == 0 ? .foreground : .background, backgroundIndicator: false))
            }
        }
        // Ten batches of 100 fill the noisy app's share; they wait behind the stuck group.
        let queued = (0..<10).map { index in Task { try await service.events.ingest(appID: noisy, submissions: batch("n\(index)")) } }
        #expect(try await waitUntil(timeout: .seconds(30)) { service.health.statistics.queuedEvents == 1_000 })
        let over = await Result(catching: { try await service.events.ingest(appID: noisy, submissions: batch("n-over")) })
        #expect((over.failure as? ServiceError)?.code == .overloaded, "the noisy app's eleventh batch was not refused")
        let quietBatch = Task { try await service.events.ingest(appID: quiet, submissions: batch("q")) }
        #expect(try await waitUntil(timeout: .seconds(30)) { service.health.statistics.queuedEvents == 1_100 })
        release.raise()
        #expect(try await quietBatch.value.count == 100)
        for task in queued { #expect(try await task.value.count == 100) }
        _ = try await stuck.value
        try await holder.value
        await blocker.close()
        await pool.close()
    }

    @Test("Groups follow one another on the drainer's connection, but a caller waiting for the pool gets it before the next group")
    func drainerYieldsTheConnection() async throws {
        // The service has one connection; its wait is short, so that a drainer that kept the
        // connection for its next group would make the query below fail, not hang the suite.
        let pool = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 1, waitTimeout: .seconds(10), logger: TestDatabase.logger)
        let observer = try await TestDatabase.pool(size: 1)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        // Other transactions hold two streams' append locks until the test lets each go.
        let holders = try await TestDatabase.pool(size: 2)
        func hold(_ device: String, _ locked: TestLatch, _ release: TestLatch) -> Task<Void, any Error> {
            let key = StreamKey(appID: appID, userID: "u", deviceID: device).lockKey
            return Task {
                try await holders.transaction { connection in
                    try connection.query("SELECT pg_advisory_xact_lock(\(key))")
                    locked.raise()
                    release.block()
                }
            }
        }
        func append(_ device: String) -> Task<[EventResult], any Error> {
            Task {
                try await service.events.ingest(appID: appID, submissions: [EventSubmission(
                    id: UUID(), userId: "u", deviceId: device, occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                    event: .appStateChanged(.foreground, backgroundIndicator: false))])
            }
        }
        func waitingForLock(_ device: String) async throws -> Bool {
            let key = StreamKey(appID: appID, userID: "u", deviceID: device).lockKey
            let high = Int64(UInt32(truncatingIfNeeded: key >> 32)), low = Int64(UInt32(truncatingIfNeeded: key))
            return try await observer.query(
                """
                SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted AND classid::bigint = \(high) AND objid::bigint = \(low)
                """).first?.decode(0, as: Int64.self) == 1
        }
        let (lockedA, releaseA, lockedB, releaseB) = (TestLatch(), TestLatch(), TestLatch(), TestLatch())
        defer { releaseA.raise(); releaseB.raise() }
        let holderA = hold("a", lockedA, releaseA), holderB = hold("b", lockedB, releaseB)
        #expect(try await waitUntil { lockedA.isRaised && lockedB.isRaised })
        // The first group waits for a's lock on the only connection; b's request queues behind
        // it, and a query waits for the connection.
        let first = append("a")
        #expect(try await waitUntil { try await waitingForLock("a") })
        let second = append("b")
        #expect(try await waitUntil { service.health.statistics.queuedEvents == 1 })
        let query = Task { try await pool.query("SELECT 41 + 1").first?.decode(0, as: Int.self) }
        #expect(try await waitUntil { pool.waiting == 1 })
        // a's group commits; the query gets the connection before b's group takes it (which
        // then waits for b's lock, still held).
        releaseA.raise()
        #expect(try await first.value[0].version == 1)
        #expect(try await query.value == 42)
        #expect(try await waitUntil { try await waitingForLock("b") })
        releaseB.raise()
        #expect(try await second.value[0].version == 1)
        try await holderA.value
        try await holderB.value
        await holders.close()
        await observer.close()
        await pool.close()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }

    var failure: (any Error)? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
