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
                        let results = try await service.ingest(appID: appID, submissions: [submission(expectedVersion: index % 10 == 0 ? 10_000 : nil)])
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
            _ = try await service.ingest(appID: appID, submissions: [EventSubmission(
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
                            return (kind, .success(try await service.ingest(appID: appID, submissions: [submission])[0]))
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
        // test lets it go.
        let held = StreamKey(appID: appID, userID: "u", deviceID: "held")
        let blocker = try await TestDatabase.pool(size: 1)
        let locked = TestLatch()
        let release = TestLatch()
        defer { release.raise() }
        let holder = Task {
            try await blocker.transaction { connection in
                try connection.query("SELECT pg_advisory_xact_lock(\(held.lockKey))")
                locked.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { locked.isRaised })
        // The stuck append notes whether the lock had been let go when it was acknowledged.
        let stuck = Task {
            let result = try await service.ingest(appID: appID, submissions: [submission("held")])
            return (result, release.isRaised)
        }
        // Its group is waiting for the lock (an advisory lock's key is classid:objid): only then
        // do the other appends start, so that none of them shares its group.
        let high = Int64(UInt32(truncatingIfNeeded: held.lockKey >> 32))
        let low = Int64(UInt32(truncatingIfNeeded: held.lockKey))
        #expect(try await waitUntil {
            try await pool.query(
                """
                SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted AND classid::bigint = \(high) AND objid::bigint = \(low)
                """).first?.decode(0, as: Int64.self) == 1
        })
        // The first group waits for the lock; these are queued behind it, and a second group
        // takes them once they have waited. They are all appended while the lock is still held,
        // so none of them waited for the stuck group.
        for device in 0..<5 {
            let result = try await service.ingest(appID: appID, submissions: [submission("free\(device)")])
            #expect(result[0].version == 1)
        }
        release.raise()
        let (stuckResult, afterRelease) = try await stuck.value
        #expect(stuckResult[0].version == 1)
        #expect(afterRelease, "the held stream was appended before its lock was free")
        try await holder.value
        await blocker.close()
        await pool.close()
    }
}
