import Foundation
import HTTPTypes
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §1's range for times a request carries: from 1970-01-01T00:00:00Z up to but not
/// including the year 10000. A time outside is a 422 naming its field, nothing is stored, and
/// the server goes on answering (a year-0 `occurredAt` used to trap the process when the time
/// was formatted for PostgreSQL; `12026-…` was stored as 2026 with its first digit dropped).
@Suite("HTTP: times outside SPEC §1's range", .timeLimit(.minutes(2)))
struct TimeBoundsTests {
    static let outside = [
        "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1500-06-01T00:00:00Z", "1969-12-31T23:59:59Z",
        "12026-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z",
    ]

    @Test("occurredAt outside the range is 422 naming occurredAt, nothing is stored, and the server still answers")
    func occurredAt() async throws {
        try await APIHarness.run { api in
            let (appID, admin) = try await api.createApp()
            let ingest = try await api.createKey(admin, scope: "ingest")
            for time in Self.outside {
                let reply = try await api.append(ingest, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, at: time)])
                let message = (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(reply.status == .unprocessableContent, "\(time): \(reply.text)")
                #expect(reply.errorCode == "validationFailed", "\(time): \(reply.text)")
                #expect(message.hasPrefix("occurredAt"), "\(time): \(message)")
            }
            let pool = try await TestDatabase.pool(size: 1)
            let id = UUID(uuidString: appID) ?? UUID()
            let stored = try await pool.query("SELECT count(*) FROM events WHERE app_id = \(id)").first?.decode(0, as: Int64.self)
            #expect(stored == 0)
            // The edges inside the range are accepted, and stored as sent.
            for time in ["1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z"] {
                let reply = try await api.append(ingest, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, device: "edge", at: time)])
                #expect(reply.status == .ok, "\(time): \(reply.text)")
            }
            let years = try await pool.query(
                "SELECT extract(year FROM occurred_at AT TIME ZONE 'UTC')::int8 FROM events WHERE app_id = \(id) ORDER BY 1")
                .map { try $0.decode(0, as: Int64.self) }
            #expect(years == [1970, 9999])
        }
    }

    @Test("Analytics from/to and state asOf outside the range are 422 naming the field")
    func queryTimes() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            for field in ["from", "to"] {
                for time in ["0000-01-01", "0000-01-01T00:00:00Z", "1500-06-01"] {
                    let reply = try await api.call(.get, "/v1/analytics/prompts?\(field)=\(time)", key: read)
                    let message = (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
                    #expect(reply.status == .unprocessableContent && message.hasPrefix(field), "\(field)=\(time): \(reply.text)")
                }
            }
            let asOf = try await api.call(.get, "/v1/users/u/devices/d/state?asOf=0000-01-01T00:00:00Z", key: read)
            #expect(asOf.status == .unprocessableContent && asOf.errorCode == "validationFailed", "\(asOf.text)")
            let fine = try await api.call(.get, "/v1/analytics/prompts?from=2026-01-01", key: read)
            #expect(fine.status == .ok, "\(fine.text)")
        }
    }
}
