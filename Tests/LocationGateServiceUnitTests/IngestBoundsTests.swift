import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Testing

@testable import LocationGateService

/// What ingest checks before the log (SPEC §14's bound on `occurredAt`), and the change feed's
/// message (SPEC §5: `accuracy` beside `status`).
@Suite("Ingest bounds and change feed messages", .timeLimit(.minutes(1)))
struct IngestBoundsTests {
    private static func submission(at time: Date) -> EventSubmission {
        EventSubmission(id: UUID(), userId: "u", deviceId: "d", occurredAt: time, event: .locationServicesChanged(enabled: true))
    }

    @Test("occurredAt beyond the server's clock plus the skew is a 422 naming occurredAt and the first such event")
    func clockSkew() throws {
        let now = Date(timeIntervalSince1970: 1_795_341_600)
        let skew = Duration.seconds(86_400)
        let latest = now.addingTimeInterval(86_400)
        try IngestCapability.checkClockSkew([Self.submission(at: now), Self.submission(at: latest)], latest: latest, skew: skew)
        do throws(ServiceError) {
            try IngestCapability.checkClockSkew(
                [Self.submission(at: now), Self.submission(at: latest.addingTimeInterval(1)), Self.submission(at: latest.addingTimeInterval(9))],
                latest: latest, skew: skew)
            Issue.record("a time 24 h and 1 s ahead was accepted")
        } catch {
            #expect(error.code == .validationFailed && error.index == 1)
            #expect(error.message.hasPrefix("occurredAt: more than 86400 seconds ahead"), "\(error.message)")
        }
    }

    @Test("A change feed message carries the status and the effective accuracy after its event")
    func changeMessage() {
        let message = ChangeMessage(
            position: LogPosition(transactionID: 7342, position: 3), userId: "u-42", deviceId: "d-7", version: 3,
            status: .authorizedWhenInUse, accuracy: .reduced)
        #expect(message.json == #"{"accuracy":"reduced","deviceId":"d-7","status":"authorizedWhenInUse","userId":"u-42","version":3}"#)
        #expect(message.position.eventID == "7342.3")
    }

    @Test("A failed append that may have committed (the database failed) makes ingest drop its devices; a refusal does not")
    func mayHaveCommitted() {
        let stream = StreamKey(appID: UUID(), userID: "u", deviceID: "d")
        let lost = PostgresError(.connectionFailed, message: "server closed the connection unexpectedly")
        #expect(IngestCapability.mayHaveCommitted(lost))
        #expect(IngestCapability.mayHaveCommitted(EventLogError.database(lost)))
        #expect(!IngestCapability.mayHaveCommitted(EventLogError.versionConflict(index: 0, stream: stream, expected: 1, actual: 2)))
        #expect(!IngestCapability.mayHaveCommitted(EventLogError.idConflict(index: 0, id: UUID(), field: "data")))
        #expect(!IngestCapability.mayHaveCommitted(EventLogError.rejected(index: 0, reason: lost)))
        #expect(!IngestCapability.mayHaveCommitted(ServiceError(.overloaded, "the server is busy")))
    }

    @Test("A database that cannot answer is a 503 whose cause (for the command line and the log) names the database's error; the client's message does not")
    func unavailableKeepsItsCause() {
        let lost = PostgresError(.connectionFailed, message: "server closed the connection unexpectedly")
        let error = ServiceError.from(lost)
        #expect(error.code == .databaseUnavailable && error.message == "the database is unavailable")
        #expect(error.detailedDescription.contains("server closed the connection unexpectedly"), "\(error.detailedDescription)")
        #expect(!error.description.contains("server closed"))
        let wrapped = ServiceError.from(EventLogError.database(lost))
        #expect(wrapped == error && wrapped.detailedDescription == error.detailedDescription)
    }
}
