import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `EventTransport` over URLSession: `POST {baseURL}/v1/events` with the app's ingest key.
///
/// Works on Apple platforms and, through FoundationNetworking, on Linux. Give it an `ingest`
/// key (SPEC §5): the scope a device may hold, which can append events and read nothing.
///
/// Redirects are not followed, whatever the session's own delegate does: a captive portal
/// redirects to its login page, whose 200 is not the server's answer, and a redirect would
/// carry the key elsewhere. The 3xx is returned as it is, and the sender retries it later.
public struct URLSessionEventTransport: EventTransport {
    /// `{baseURL}/v1/events`.
    public let endpoint: URL
    public let ingestKey: String
    public let session: URLSession
    /// How long one request may take before it counts as a network failure and is retried.
    public let timeout: TimeInterval
    /// For a device-bound ingest key: the current device token from the app's backend, asked
    /// for before every request and sent as `X-Device-Token` (nil sends none). A token that
    /// expired is a 401: the sender stops, and the app fetches a new one and flushes again.
    public let deviceToken: (@Sendable () async -> String?)?

    public init(
        baseURL: URL, ingestKey: String, session: URLSession = .shared, timeout: TimeInterval = 30,
        deviceToken: (@Sendable () async -> String?)? = nil
    ) {
        self.endpoint = baseURL.appendingPathComponent("v1").appendingPathComponent("events")
        self.ingestKey = ingestKey
        self.session = session
        self.timeout = timeout
        self.deviceToken = deviceToken
    }

    public func send(_ body: Data) async throws -> (status: Int, headers: [String: String], body: Data) {
        var request = URLRequest(url: endpoint, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("Bearer \(ingestKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token = await deviceToken?() { request.setValue(token, forHTTPHeaderField: "X-Device-Token") }
        request.httpBody = body
        let (data, response) = try await session.data(for: request, delegate: Self.redirects)
        guard let http = response as? HTTPURLResponse else {
            throw URLError(.badServerResponse)
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name.base as? String, let value = value as? String {
                headers[name.lowercased()] = value
            }
        }
        return (http.statusCode, headers, data)
    }

    /// One delegate for every request: it holds nothing.
    private static let redirects = RedirectRefusal()
}

/// A task delegate that refuses every redirect, so that the 3xx itself is the task's response.
final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
