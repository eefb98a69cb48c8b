import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// Erasure at any size and under load (SPEC §13): a person is erased a page at a time, the apps
/// take turns, a failed step is retried with backoff and shows on the record, an app's pending
/// erasures are bounded, and app versions only erased devices reported are folded into
/// "(erased)". Each test on a database of its own: the worker's steps serve every app of the
/// database, and the tests count them.
@Suite("Erasure: pages, turns between apps, retries, the pending bound, the (erased) fold", .timeLimit(.minutes(3)))
struct ErasurePagingTests {
    static func personID() -> String { "person-" + UUID().uuidString.lowercased() + "-" + UUID().uuidString.lowercased() }

    /// `count` events of one device, a minute apart: its context, then (with `prompt`) a When
    /// In Use prompt answered (counted by the analytics), then Location Services switched off
    /// and on.
    static func device(_ user: String, _ device: String, appVersion: String = "1.0", count: Int, prompt: Bool = true) -> [EventSubmission] {
        let start = Date(timeIntervalSince1970: 1_793_000_000)
        var events: [LocationEvent] = [.contextReported(DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), appVersion: appVersion))]
        if prompt { events += [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)] }
        var enabled = false
        while events.count < count {
            events.append(.locationServicesChanged(enabled: enabled))
            enabled.toggle()
        }
        return events.prefix(count).enumerated().map { index, event in
            EventSubmission(id: UUID(), userId: user, deviceId: device, occurredAt: start.addingTimeInterval(Double(index) * 60), event: event)
        }
    }

    static func ingest(_ service: GateService, _ appID: UUID, _ submissions: [EventSubmission]) async throws {
        for start in stride(from: 0, to: submissions.count, by: 500) {
            _ = try await service.events.ingest(appID: appID, submissions: Array(submissions[start..<min(start + 500, submissions.count)]))
        }
    }

    static func record(_ service: GateService, _ appID: UUID, _ id: UUID) async throws -> ErasureRecord {
        try #require(try await service.erasure.erasure(appID: appID, id: id))
    }

    static func count(_ pool: PostgresConnectionPool, _ query: PostgresQuery) async throws -> Int64 {
        try await pool.query(query).first?.decode(0, as: Int64.self) ?? -1
    }

    /// Steps and completions, as a server's worker takes them, until the erasure is done;
    /// returns the steps taken. A step that is not due yet (a backoff) waits for it.
    static func stepsUntilDone(_ service: GateService, _ appID: UUID, _ id: UUID, timeout: Duration = .seconds(60)) async throws -> Int {
        var steps = 0
        let done = try await waitUntil(timeout: timeout) {
            if try await service.erasure.performNextErasure() { steps += 1 }
            try await service.erasure.completeErasures()
            return try await Self.record(service, appID, id).status == "done"
        }
        #expect(done, "the erasure is not done within \(timeout)")
        return steps
    }

    /// The prompts answered per app version, as `GET /v1/analytics/prompts?groupBy=appVersion`.
    static func answeredByVersion(_ service: GateService, _ appID: UUID) async throws -> [String: Double] {
        var answered: [String: Double] = [:]
        for row in try await service.countedAnalytics(AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [.appVersion])) {
            let fields = Dictionary(row, uniquingKeysWith: { first, _ in first })
            guard case .string(let version)? = fields["appVersion"], case .number(let count)? = fields["answered"] else { continue }
            answered[version, default: 0] += count
        }
        return answered
    }

    static func verify(_ pool: PostgresConnectionPool, _ appID: UUID) async throws {
        let differences = try await Replay(pool: pool, appID: appID, logger: TestDatabase.logger).verify()
        #expect(differences.isEmpty, "\(differences.prefix(5))")
    }

    @Test("A person of many pages is erased a page per step: no step erases more than a page, replay and verify agree between steps, appends racing the erasure are erased with the rest, and nothing of the person is left")
    func pages() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_erasure_pages")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        service.erasure.erasureSettings.pageSize = 7
        let appID = try await TestDatabase.makeApp(pool)
        let person = Self.personID()
        var submissions = Self.device(person, "big", count: 40)
        for index in 1...3 { submissions += Self.device(person, "small-\(index)", count: 3) }
        submissions += Self.device("someone-else", "phone", count: 5)
        try await Self.ingest(service, appID, submissions)
        let prompts = try AnalyticsRowsJSON.json(try await service.countedAnalytics(AnalyticsQuery(kind: .prompts, appID: appID)))

        let erasure = try await service.erasure.requestErasure(appID: appID, userID: person, actor: .cli)
        var steps = 0
        var erased: Int64 = 0
        var record = try await Self.record(service, appID, erasure.id)
        while record.status != "done" {
            #expect(try await service.erasure.performNextErasure())
            try await service.erasure.completeErasures()
            steps += 1
            record = try await Self.record(service, appID, erasure.id)
            #expect(record.events - erased <= 7, "step \(steps) erased \(record.events - erased) events, more than a page of 7")
            erased = record.events
            if steps == 2 {
                // Between steps the database is whole: the device cut short has its snapshot.
                #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE user_id = \(person)") == 49 - 14)
                try await Self.verify(pool, appID)
                // Appends of the person while the erasure goes on: erased with the rest.
                let late = Date(timeIntervalSince1970: 1_793_100_000)
                var racing = [true, false, true, false].enumerated().map { index, enabled in
                    EventSubmission(
                        id: UUID(), userId: person, deviceId: "big", occurredAt: late.addingTimeInterval(Double(index)),
                        event: .locationServicesChanged(enabled: enabled))
                }
                racing += [false, true].enumerated().map { index, enabled in
                    EventSubmission(
                        id: UUID(), userId: person, deviceId: "late", occurredAt: late.addingTimeInterval(Double(index)),
                        event: .locationServicesChanged(enabled: enabled))
                }
                _ = try await service.events.ingest(appID: appID, submissions: racing)
            }
            try #require(steps < 100, "the erasure does not end")
        }
        #expect(steps >= 8, "55 events in pages of 7 take 8 steps at least, not \(steps)")
        #expect(record.events == 55 && record.devices == 5, "\(record)")
        #expect(record.attempts == 0 && record.lastError == nil)

        // Nothing of the person, in any table; the other person whole; the figures unchanged.
        for table in ["events", "streams", "device_states", "stream_snapshots", "archive_keys"] {
            #expect(try await Self.count(pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE user_id = $1", binds: [person.postgresBind])) == 0, "\(table)")
        }
        #expect(try await Self.count(pool, "SELECT count(*) FROM event_archives WHERE kind = 'erasure'") == 0)
        #expect(try await Self.count(pool, "SELECT count(*) FROM erasure_devices") == 0)
        #expect(try await Self.count(pool, "SELECT count(*) FROM erasure_work") == 0)
        #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE user_id = 'someone-else'") == 5)
        #expect(try AnalyticsRowsJSON.json(try await service.countedAnalytics(AnalyticsQuery(kind: .prompts, appID: appID))) == prompts)
        try await Self.verify(pool, appID)
        await pool.close()
    }

    @Test("Apps take turns: a small erasure of one app is done within two steps while another app has a person of twelve pages and thirty more erasures pending, and again when it asks in the middle of them")
    func turns() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_erasure_turns")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        service.erasure.erasureSettings.pageSize = 5
        let flooding = try await TestDatabase.makeApp(pool, name: "flooding")
        let quiet = try await TestDatabase.makeApp(pool, name: "quiet")
        let large = Self.personID()
        let small = Self.personID()
        try await Self.ingest(service, flooding, Self.device(large, "tablet", count: 60))
        try await Self.ingest(service, quiet, Self.device(small, "phone", count: 3))

        // The flooding app asks first, for its large person and thirty more.
        let largeErasure = try await service.erasure.requestErasure(appID: flooding, userID: large, actor: .cli)
        var floods = [largeErasure.id]
        for index in 0..<30 { floods.append(try await service.erasure.requestErasure(appID: flooding, userID: "nobody-\(index)", actor: .cli).id) }
        let first = try await service.erasure.requestErasure(appID: quiet, userID: small, actor: .cli)
        let steps = try await Self.stepsUntilDone(service, quiet, first.id)
        #expect(steps <= 2, "the quiet app's erasure took \(steps) steps")
        #expect(try await Self.record(service, flooding, floods[0]).status == "pending", "the flooding app's queue is far from drained")
        #expect(try await Self.record(service, quiet, first.id).events == 3)

        // The flooding app keeps the worker busy; the quiet app asks again meanwhile.
        for _ in 0..<3 { #expect(try await service.erasure.performNextErasure()) }
        let second = try await service.erasure.requestErasure(appID: quiet, userID: "nobody-quiet", actor: .cli)
        let again = try await Self.stepsUntilDone(service, quiet, second.id)
        #expect(again <= 2, "the quiet app's second erasure took \(again) steps")

        // Then every erasure of the flooding app is done too.
        while try await service.erasure.performNextErasure() {}
        try await service.erasure.completeErasures()
        for id in floods { #expect(try await Self.record(service, flooding, id).status == "done") }
        #expect(try await Self.record(service, flooding, floods[0]).events == 60)
        await pool.close()
    }

    @Test("A failed step is retried with a growing backoff, shows as attempts and lastError on the record, and does not hold up another erasure")
    func retries() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_erasure_retry")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        service.erasure.erasureSettings.lockTimeout = .milliseconds(100)
        service.erasure.erasureSettings.retryDelay = .milliseconds(300)
        service.erasure.erasureSettings.maxRetryDelay = .seconds(2)
        let appID = try await TestDatabase.makeApp(pool)
        let stuck = Self.personID()
        let other = Self.personID()
        try await Self.ingest(service, appID, Self.device(stuck, "phone", count: 3) + Self.device(other, "phone", count: 3))
        let failing = try await service.erasure.requestErasure(appID: appID, userID: stuck, actor: .cli)
        let passing = try await service.erasure.requestErasure(appID: appID, userID: other, actor: .cli)

        // The person's lock held elsewhere (as by an append that does not finish), on a
        // connection of its own until the test releases it: each step of that erasure waits
        // 100 ms for it and fails.
        let locked = TestLatch()
        let release = TestLatch()
        let key = EventLog.userLockKey(appID: appID, userID: stuck)
        let holder = Task {
            try await pool.withConnection { connection in
                try connection.query("SELECT pg_advisory_lock(\(key))")
                locked.raise()
                release.block(atMost: .seconds(60))
                try connection.query("SELECT pg_advisory_unlock(\(key))")
            }
        }
        #expect(try await waitUntil(timeout: .seconds(30)) { locked.isRaised })

        let started = ContinuousClock.now
        #expect(try await service.erasure.performNextErasure(), "the older erasure's step was taken, and failed")
        let failed = try await Self.record(service, appID, failing.id)
        #expect(failed.status == "pending" && failed.attempts == 1 && failed.lastError == "overloaded", "\(failed)")
        #expect(failed.events == 0)

        // The other erasure goes on meanwhile.
        _ = try await Self.stepsUntilDone(service, appID, passing.id)
        #expect(try await Self.record(service, appID, passing.id).events == 3)
        #expect(try await Self.record(service, appID, failing.id).status == "pending")

        // Backoff: the third failure comes no sooner than 300 ms and then 600 ms after the first.
        let thrice = try await waitUntil(timeout: .seconds(30)) {
            try await service.erasure.performNextErasure()
            return try await Self.record(service, appID, failing.id).attempts >= 3
        }
        #expect(thrice, "the failing erasure was not tried three times")
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(900), "three failures within \(elapsed): no backoff")

        // Released, it is done on a later attempt; the record keeps what failed.
        release.raise()
        try await holder.value
        _ = try await Self.stepsUntilDone(service, appID, failing.id)
        let done = try await Self.record(service, appID, failing.id)
        #expect(done.status == "done" && done.events == 3 && done.attempts >= 3 && done.lastError == "overloaded", "\(done)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE user_id = \(stuck)") == 0)
        try await Self.verify(pool, appID)
        await pool.close()
    }

    @Test("An app may have a bounded number of erasures pending: beyond, a request is refused as rateLimited (429) and recorded nowhere; other apps are not counted; once some are done it may ask again")
    func pendingBound() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_erasure_bound")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        service.erasure.erasureSettings.maxPendingPerApp = 3
        let appID = try await TestDatabase.makeApp(pool)
        let otherApp = try await TestDatabase.makeApp(pool)
        for index in 0..<3 { _ = try await service.erasure.requestErasure(appID: appID, userID: "user-\(index)", actor: .cli) }

        var refused: ServiceError?
        do {
            _ = try await service.erasure.requestErasure(appID: appID, userID: "user-3", actor: .cli)
        } catch {
            refused = ServiceError.from(error)
        }
        #expect(refused?.code == .rateLimited, "\(String(describing: refused))")
        #expect(try await Self.count(pool, "SELECT count(*) FROM erasures WHERE app_id = \(appID)") == 3)
        // The bound is per app.
        _ = try await service.erasure.requestErasure(appID: otherApp, userID: "user-0", actor: .cli)

        while try await service.erasure.performNextErasure() {}
        #expect(try await service.erasure.completeErasures() == 4)
        let accepted = try await service.erasure.requestErasure(appID: appID, userID: "user-3", actor: .cli)
        #expect(accepted.status == "pending")
        await pool.close()
    }

    @Test("App versions only erased devices reported are folded into \"(erased)\" when the erasure runs; a version another device reports, or counted for, stays; the counts do not move and verify stays clean")
    func erasedFold() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_erasure_fold")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let person = Self.personID()
        let other = Self.personID()
        let own = "build-of-\(person.suffix(12))"
        // The person's three devices: a version of their own, one shared with another person's
        // counted prompt, and one a third person's device reports now (without any prompt).
        var submissions = Self.device(person, "d1", appVersion: own, count: 3)
        submissions += Self.device(person, "d2", appVersion: "shared-2.0", count: 3)
        submissions += Self.device(person, "d3", appVersion: "kept-3.0", count: 3)
        submissions += Self.device(other, "phone", appVersion: "shared-2.0", count: 3)
        submissions += Self.device("third", "phone", appVersion: "kept-3.0", count: 1, prompt: false)
        try await Self.ingest(service, appID, submissions)
        #expect(try await Self.answeredByVersion(service, appID) == [own: 1, "shared-2.0": 2, "kept-3.0": 1])

        let first = try await service.erasure.requestErasure(appID: appID, userID: person, actor: .cli)
        _ = try await Self.stepsUntilDone(service, appID, first.id)
        #expect(try await Self.answeredByVersion(service, appID) == ["(erased)": 1, "shared-2.0": 2, "kept-3.0": 1])
        for table in ["analytics_rollups", "analytics_totals", "erasure_rollups", "archived_rollups"] {
            let rows = try await Self.count(pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE app_version = $1", binds: [own.postgresBind]))
            #expect(rows == 0, "\(table) keeps the erased device's own version")
        }
        try await Self.verify(pool, appID)

        // The other reporter of "shared-2.0" erased too: no device left reports it.
        let second = try await service.erasure.requestErasure(appID: appID, userID: other, actor: .cli)
        _ = try await Self.stepsUntilDone(service, appID, second.id)
        #expect(try await Self.answeredByVersion(service, appID) == ["(erased)": 3, "kept-3.0": 1])
        try await Self.verify(pool, appID)
        await pool.close()
    }

    @Test("A client's own appVersion of \"(erased)\" is refused as a 422 (validationFailed, naming data.appVersion); versions that only contain it are kept")
    func reservedAppVersion() throws {
        func submission(_ version: String) throws -> EventSubmission {
            let json = #"{"id": "\#(UUID().uuidString.lowercased())", "userId": "u-1", "deviceId": "d-1", "occurredAt": "2026-11-22T08:00:00Z", "type": "contextReported", "data": {"platform": "iOS", "osVersion": "17.4", "appVersion": "\#(version)"}}"#
            return try JSONDecoder().decode(EventSubmission.self, from: Data(json.utf8))
        }
        do {
            _ = try submission("(erased)")
            Issue.record("an appVersion of (erased) was accepted")
        } catch let error as EventValidationError {
            #expect(!error.isMalformed && error.field == "data.appVersion", "\(error)")
        }
        for version in ["(erased) 2", "erased", "1.0 (erased)"] {
            guard case .contextReported(let context) = try submission(version).event else {
                Issue.record("not a contextReported event")
                continue
            }
            #expect(context.appVersion == version)
        }
    }
}
