import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

@Suite("Group commit: concurrent small appends share transactions and fail alone")
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
}
