import Foundation

/// What the sender does with one answer to `POST /v1/events` (SPEC §5), decided in one place.
enum DeliveryOutcome: Sendable, Hashable {
    /// 2xx: every event of the batch is stored, `duplicates` of them by an earlier attempt.
    case accepted(duplicates: Int)
    /// 429, 503, another 5xx or 408: send the same batch again, after Retry-After if given.
    case retry(after: Duration?)
    /// 400, 409, 413 or 422 naming the event at `index`: drop that one, send the rest.
    case refuseEvent(index: Int, status: Int, code: String?, message: String)
    /// 400, 409, 413 or 422 naming no event: narrow the batch down until one is named or alone.
    case refuseBatch(status: Int, code: String?, message: String)
    /// 401, 403 or a status with no rule: stop.
    case stop(DeliveryError)

    static func classify(status: Int, headers: [String: String], body: Data, batchCount: Int) -> DeliveryOutcome {
        switch status {
        case 200..<300:
            let results = try? JSONDecoder().decode(ResultsBody.self, from: body)
            return .accepted(duplicates: results?.results.filter { $0.duplicate == true }.count ?? 0)
        case 408, 429, 500..<600:
            return .retry(after: retryAfter(headers))
        case 401, 403:
            return .stop(.unauthorized(status: status, message: errorDetail(body).message ?? "status \(status)"))
        case 400, 409, 413, 422:
            let detail = errorDetail(body)
            let message = detail.message ?? "status \(status)"
            if let index = detail.index, (0..<batchCount).contains(index) {
                return .refuseEvent(index: index, status: status, code: detail.code, message: message)
            }
            return .refuseBatch(status: status, code: detail.code, message: message)
        default:
            return .stop(.unexpectedStatus(status, message: errorDetail(body).message ?? String(decoding: body.prefix(200), as: UTF8.self)))
        }
    }

    /// Retry-After in seconds (what LocationGate sends); the HTTP-date form is left to backoff.
    static func retryAfter(_ headers: [String: String]) -> Duration? {
        guard let value = headers.first(where: { $0.key.lowercased() == "retry-after" })?.value else { return nil }
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text), seconds >= 0 { return .seconds(seconds) }
        if let seconds = Double(text), seconds.isFinite, seconds >= 0 { return .seconds(seconds) }
        return nil
    }

    private static func errorDetail(_ body: Data) -> ErrorBody.Detail {
        (try? JSONDecoder().decode(ErrorBody.self, from: body))?.error ?? ErrorBody.Detail()
    }

    /// `{"results": [{"id", "duplicate", ...}]}`; only `duplicate` matters here.
    private struct ResultsBody: Decodable {
        struct Item: Decodable {
            var duplicate: Bool?
        }

        var results: [Item]
    }

    /// `{"error": {"code", "message", "index"}}`.
    private struct ErrorBody: Decodable {
        struct Detail: Decodable {
            var code: String?
            var message: String?
            var index: Int?
        }

        var error: Detail
    }
}
