import EventLog
import Foundation
import LocationAuthorization
import LocationGateTestSupport
import PostgresClient
import Testing

@testable import LocationGateService

/// SPEC §14 at the service: `occurredAt` ahead of the server's clock by more than the bound is
/// a 422 naming it, with nothing stored; an id stored with other content is a 409 `idConflict`
/// that fails its own request alone when group commit shares a transaction.
@Suite("Ingest: the clock-skew bound and id conflicts under group commit", .timeLimit(.minutes(2)))
struct IngestStrictnessTests {
    private static func submission(_ device: String, at time: Date, id: UUID = UUID(), enabled: Bool = true) -> EventSubmission {
        EventSubmission(id: id, userId: "u", deviceId: device, occurredAt: time, event: .locationServicesChanged(enabled: enabled))
    }

    @Test("With a bound: a time beyond it is 422 occurredAt at its index and nothing is stored; within it, appended")
    func clockSkew() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger, maxClockSkew: .seconds(3600))
        let appID = try await TestDatabase.makeApp(pool)
        let soon = Self.submission("d", at: Date().addingTimeInterval(1800))
        do throws(ServiceError) {
            _ = try await service.events.ingest(appID: appID, submissions: [soon, Self.submission("d", at: Date().addingTimeInterval(7200))])
            Issue.record("a time two hours ahead was accepted with a bound of one")
        } catch {
            #expect(error.code == .validationFailed && error.index == 1 && error.message.hasPrefix("occurredAt:"), "\(error)")
        }
        #expect(try await service.log.version(of: StreamKey(appID: appID, userID: "u", deviceID: "d")) == 0)
        #expect(try await service.events.ingest(appID: appID, submissions: [soon]).first?.version == 1)
        // Without a bound (the command line's own appends), any time of SPEC §1's range.
        let unbounded = GateService(pool: pool, logger: TestDatabase.logger)
        let far = Self.submission("far", at: Date().addingTimeInterval(400 * 86_400))
        #expect(try await unbounded.events.ingest(appID: appID, submissions: [far]).first?.version == 1)
        await pool.close()
    }

    @Test("Concurrent one-event appends: those reusing a stored id with other data fail alone with idConflict")
    func conflictsFailAlone() async throws {
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let time = Date(timeIntervalSince1970: 1_795_341_600)
        let ids = (0..<10).map { _ in UUID() }
        for (index, id) in ids.enumerated() {
            _ = try await service.events.ingest(appID: appID, submissions: [Self.submission("d\(index)", at: time, id: id)])
        }
        let outcomes = await withTaskGroup(of: (Int, Result<EventResult, ServiceError>).self) { group in
            for index in 0..<30 {
                group.addTask {
                    let submission: EventSubmission
                    switch index % 3 {
                    case 0: submission = Self.submission("d\(index / 3)", at: time, id: ids[index / 3])  // the same again
                    case 1: submission = Self.submission("d\(index / 3)", at: time, id: ids[index / 3], enabled: false)  // other data
                    default: submission = Self.submission("n\(index)", at: time)  // new
                    }
                    do throws(ServiceError) {
                        return (index, .success(try await service.events.ingest(appID: appID, submissions: [submission])[0]))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (index, outcome) in outcomes {
            switch (index % 3, outcome) {
            case (0, .success(let result)): #expect(result.duplicate && result.version == 1)
            case (1, .failure(let error)): #expect(error.code == .idConflict && error.index == 0, "\(error)")
            case (2, .success(let result)): #expect(!result.duplicate && result.version == 1)
            default: Issue.record("request \(index): \(outcome)")
            }
        }
        await pool.close()
    }
}
