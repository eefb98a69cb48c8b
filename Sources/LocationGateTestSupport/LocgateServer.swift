import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real `locgate serve` process on the test database, for the tests that need processes
/// (two servers on one database, a server killed under a client).
public final class LocgateServer: @unchecked Sendable {
    public static let adminToken = "test-process-admin"

    /// The `locgate` binary that `swift build --build-tests` made beside the test bundle.
    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["LOCGATE_BINARY"] { return URL(fileURLWithPath: path) }
        return Bundle.main.bundleURL.appendingPathComponent("locgate")
    }

    public let process = Process()
    public let port: Int

    public init(port: Int, databaseURL: String, databaseName: String) throws {
        self.port = port
        process.executableURL = Self.binary
        process.arguments = [
            "serve", "--port", String(port), "--database-url", databaseURL, "--database-name", databaseName,
            "--log-level", "warning",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["LOCGATE_ADMIN_TOKEN"] = Self.adminToken
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    /// SIGKILL: no draining, no goodbye, as a crash or an out-of-memory kill.
    public func crash() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    public static func request(_ method: String, _ port: Int, _ path: String, key: String? = nil, json: String? = nil) async throws -> (Int, [String: Any]) {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else { return (0, [:]) }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    /// Whether `/readyz` answered 200 within 10 s.
    public static func waitReady(_ port: Int) async -> Bool {
        for _ in 0..<200 {
            if let (status, _) = try? await request("GET", port, "/readyz"), status == 200 { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
