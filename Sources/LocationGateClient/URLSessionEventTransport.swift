import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `EventTransport` over URLSession: `POST {baseURL}/v1/events` with the app's ingest key.
///
/// Works on Apple platforms and, through FoundationNetworking, on Linux. Give it an `ingest`
/// key (SPEC §5): the scope a device may hold, which can append events and read nothing.
public struct URLSessionEventTransport: EventTransport {
    /// `{baseURL}/v1/events`.
    public let endpoint: URL
    public let ingestKey: String
    public let session: URLSession
    /// How long one request may take before it counts as a network failure and is retried.
    public let timeout: TimeInterval

    public init(baseURL: URL, ingestKey: String, session: URLSession = .shared, timeout: TimeInterval = 30) {
        self.endpoint = baseURL.appendingPathComponent("v1").appendingPathComponent("events")
        self.ingestKey = ingestKey
        self.session = session
        self.timeout = timeout
    }

    public func send(_ body: Data) async throws -> (status: Int, headers: [String: String], body: Data) {
        var request = URLRequest(url: endpoint, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("Bearer \(ingestKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
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
}
