import Foundation
import LocationAuthorization
import Testing

@testable import LocationGateService

/// Analytics' query parameters (SPEC §1's time range, §6, §14): a malformed value is a 400, a
/// time outside the range a 422 however many digits its year has, and `from` after `to` a 422
/// naming `from`.
@Suite("Analytics: parsing from, to, groupBy and platform", .timeLimit(.minutes(1)))
struct AnalyticsQueryParsingTests {
    private static func refusal(_ body: () throws(ServiceError) -> Void) -> ServiceError? {
        do throws(ServiceError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("Times and dates in range are read; a malformed one is a 400 invalidRequest naming the parameter")
    func wellFormed() throws {
        #expect(try AnalyticsQuery.parseTime("2026-11-20", "from") == RFC3339.date(from: "2026-11-20T00:00:00Z"))
        #expect(try AnalyticsQuery.parseTime("2026-11-20T10:00:00+01:00", "to") == RFC3339.date(from: "2026-11-20T09:00:00Z"))
        #expect(try AnalyticsQuery.parseTime(nil, "from") == nil)
        for text in ["2026-13-01", "2026-02-30", "yesterday", "", "2026-11-20T25:00:00Z", "12026-13-01", "12026-01-01T99:00:00Z"] {
            let error = Self.refusal { () throws(ServiceError) in _ = try AnalyticsQuery.parseTime(text, "to") }
            #expect(error?.code == .invalidRequest, "\(text): \(error?.description ?? "accepted")")
            #expect(error?.message.hasPrefix("to:") == true)
        }
    }

    @Test("A time or date outside SPEC §1's range is a 422 validationFailed naming the parameter, five-digit years included")
    func outOfRange() {
        for text in [
            "12026-01-01T00:00:00Z", "12026-01-01", "99999999999999999999-01-01", "-0001-01-01", "+2026-01-01",
            "0000-01-01", "1500-06-01", "1969-12-31T23:59:59Z", "10000-01-01T00:00:00Z",
        ] {
            let error = Self.refusal { () throws(ServiceError) in _ = try AnalyticsQuery.parseTime(text, "to") }
            #expect(error?.code == .validationFailed, "\(text): \(error?.description ?? "accepted")")
            #expect(error?.message == "to: \(RFC3339.rangeMessage)", "\(text)")
        }
    }

    @Test("from after to is a 422 naming from; equal or ordered bounds, or one of them, are accepted")
    func range() throws {
        let after = Self.refusal { () throws(ServiceError) in _ = try AnalyticsQuery.parseRange(from: "2026-11-21", to: "2026-11-20") }
        #expect(after?.code == .validationFailed && after?.message.hasPrefix("from:") == true, "\(after?.description ?? "accepted")")
        let instant = Self.refusal { () throws(ServiceError) in _ = try AnalyticsQuery.parseRange(from: "2026-11-20T12:00:00Z", to: "2026-11-20T11:59:59Z") }
        #expect(instant?.code == .validationFailed)
        #expect(try AnalyticsQuery.parseRange(from: "2026-11-20", to: "2026-11-20").from != nil)
        #expect(try AnalyticsQuery.parseRange(from: "2026-11-20", to: nil).to == nil)
        #expect(try AnalyticsQuery.parseRange(from: nil, to: "2026-11-20").from == nil)
        // A malformed bound is still a 400, before the comparison.
        #expect(Self.refusal { () throws(ServiceError) in _ = try AnalyticsQuery.parseRange(from: "soon", to: "2026-11-20") }?.code == .invalidRequest)
    }

    @Test("parse reads every parameter and checks them together")
    func parse() throws {
        let appID = UUID()
        let query = try AnalyticsQuery.parse(
            kind: .prompts, appID: appID, groupBy: "platform,week", from: "2026-11-01", to: "2026-11-30", platform: "iOS")
        #expect(query.kind == .prompts && query.appID == appID && query.groupBy == [.platform, .week] && query.platform == "iOS")
        #expect(query.from == RFC3339.date(from: "2026-11-01T00:00:00Z") && query.to == RFC3339.date(from: "2026-11-30T00:00:00Z"))
        let empty = try AnalyticsQuery.parse(kind: .statuses, appID: appID, groupBy: nil, from: nil, to: nil, platform: nil)
        #expect(empty.groupBy.isEmpty && empty.from == nil && empty.to == nil && empty.platform == nil)
        let reversed = Self.refusal { () throws(ServiceError) in
            _ = try AnalyticsQuery.parse(kind: .prompts, appID: appID, groupBy: nil, from: "2026-12-01", to: "2026-11-01", platform: nil)
        }
        #expect(reversed?.code == .validationFailed && reversed?.message.hasPrefix("from:") == true)
        let future = Self.refusal { () throws(ServiceError) in
            _ = try AnalyticsQuery.parse(kind: .prompts, appID: appID, groupBy: nil, from: nil, to: "12026-01-01T00:00:00Z", platform: nil)
        }
        #expect(future?.code == .validationFailed && future?.message.hasPrefix("to:") == true)
        #expect(Self.refusal { () throws(ServiceError) in
            _ = try AnalyticsQuery.parse(kind: .prompts, appID: appID, groupBy: "day,week", from: nil, to: nil, platform: nil)
        }?.code == .invalidRequest)
    }
}
