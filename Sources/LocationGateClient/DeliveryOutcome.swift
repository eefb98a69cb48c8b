import Foundation

/// What the sender does with one answer to `POST /v1/events` (SPEC §5), decided in one place.
///
/// An answer deletes events from the queue only when it is recognisably the server's: a 2xx
/// whose body is `{"results": [...]}` with one result per event sent, ids in the order sent, or
/// a refusal whose body is the server's JSON error with a code that says the batch itself is
/// wrong. Anything else between the device and the server can answer too (a captive portal's
/// login page, a proxy's error page, a load balancer's redirect): such an answer is retried
/// with backoff, and nothing is deleted.
enum DeliveryOutcome: Sendable, Hashable {
    /// The server's 2xx: every event of the batch is stored, `duplicates` of them by an earlier
    /// attempt.
    case accepted(duplicates: Int)
    /// 429, 503, another 5xx or 408, or an answer that is not the server's (a 3xx, a 2xx or
    /// 4xx whose body is not the server's JSON): send the same batch again, after Retry-After
    /// if given.
    case retry(after: Duration?)
    /// The server's refusal (400, 409, 413 or 422 with a code that means the batch is wrong)
    /// naming the event at `index`: drop that one, send the rest.
    case refuseEvent(index: Int, status: Int, code: String, message: String)
    /// The server's refusal naming no event: narrow the batch down until one is named or alone.
    case refuseBatch(status: Int, code: String, message: String)
    /// 401, 403, the server's own error with a status that has no rule, or a status outside
    /// 2xx-5xx: stop.
    case stop(DeliveryError)

    /// The codes of SPEC §5 that mean the batch itself is wrong, and will be refused again
    /// however often it is sent: `malformedJSON` and `invalidRequest` (400), `versionConflict`
    /// and `idConflict` (409: the event's id is stored with other content), `tooLarge` (413),
    /// `validationFailed` and `ruleViolation` (422).
    static let refusalCodes: Set<String> = [
        "malformedJSON", "invalidRequest", "versionConflict", "idConflict", "tooLarge", "validationFailed", "ruleViolation",
    ]

    /// - Parameter sent: the ids of the batch's events, in the order sent.
    static func classify(status: Int, headers: [String: String], body: Data, sent: [UUID]) -> DeliveryOutcome {
        switch status {
        case 200..<300:
            guard let duplicates = acceptedDuplicates(body, sent: sent) else { return .retry(after: nil) }
            return .accepted(duplicates: duplicates)
        case 300..<400:
            // Redirects are not followed (a captive portal sends the request elsewhere) and
            // not the server's answer.
            return .retry(after: nil)
        case 408, 429, 500..<600:
            return .retry(after: retryAfter(headers))
        case 403:
            // A device-bound key's token does not cover the event at `index` (another user's,
            // recorded before a sign-in changed): it can never be sent with this token.
            if let refusal = serverError(body), refusal.code == "forbidden", let index = refusal.index, (0..<sent.count).contains(index) {
                return .refuseEvent(index: index, status: status, code: refusal.code, message: refusal.message)
            }
            fallthrough
        case 401:
            return .stop(.unauthorized(status: status, message: message(body) ?? "status \(status)"))
        case 400, 409, 413, 422:
            guard let refusal = serverError(body), refusalCodes.contains(refusal.code) else {
                // A proxy's page, an empty body, some other JSON: not the server's refusal.
                return .retry(after: nil)
            }
            if let index = refusal.index, (0..<sent.count).contains(index) {
                return .refuseEvent(index: index, status: status, code: refusal.code, message: refusal.message)
            }
            return .refuseBatch(status: status, code: refusal.code, message: refusal.message)
        case 400..<500:
            // The server's own error (404, 405, ...): the base URL reaches a LocationGate
            // server, but not its API, and retrying will not change that. Anything else is an
            // answer from something in between.
            guard let error = serverError(body) else { return .retry(after: nil) }
            return .stop(.unexpectedStatus(status, message: error.message))
        default:
            return .stop(.unexpectedStatus(status, message: message(body) ?? String(decoding: body.prefix(200), as: UTF8.self)))
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

    /// The number of duplicates when `body` is the server's answer to the batch `sent`: one
    /// result per event, each with the id of the event at its position. Nil otherwise.
    static func acceptedDuplicates(_ body: Data, sent: [UUID]) -> Int? {
        guard let answer = try? JSONDecoder().decode(ResultsBody.self, from: body),
            answer.results.map(\.id) == sent
        else { return nil }
        return answer.results.filter { $0.duplicate == true }.count
    }

    /// The server's error body, `{"error": {"code", "message", "index"?}}`, or nil when the
    /// body is anything else.
    static func serverError(_ body: Data) -> ErrorBody.Detail? {
        (try? JSONDecoder().decode(ErrorBody.self, from: body))?.error
    }

    /// The message of an error body, the server's or one like it, for a report.
    private static func message(_ body: Data) -> String? {
        (try? JSONDecoder().decode(LooseErrorBody.self, from: body))?.error.message
    }

    /// `{"results": [{"id", "duplicate", ...}]}`: the ids prove the answer is to this batch.
    struct ResultsBody: Decodable {
        struct Item: Decodable {
            var id: UUID
            var duplicate: Bool?
        }

        var results: [Item]
    }

    /// `{"error": {"code", "message", "index"}}`, `index` optional.
    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
            var index: Int?
        }

        var error: Detail
    }

    /// An error body with a message, whatever else it holds.
    private struct LooseErrorBody: Decodable {
        struct Detail: Decodable {
            var message: String?
        }

        var error: Detail
    }
}
