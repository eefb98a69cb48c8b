import Foundation
import LocationGateTestKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real `locgate serve` process on the test database, for the tests that need processes
/// (two servers on one database, a server killed under a client).
public final class LocgateServer: @unchecked Sendable {
    /// At least `ServerConfiguration.minimumAdminTokenBytes` (32), as `serve` demands.
    public static let adminToken = "test-process-admin-0123456789abcdef0123456789"

    /// The `locgate` binary that `swift build --build-tests` made beside the test bundle.
    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["LOCGATE_BINARY"] { return URL(fileURLWithPath: path) }
        return Bundle.main.bundleURL.appendingPathComponent("locgate")
    }

    /// Started with `posix_spawnp` (`SpawnedProcess`), not `Process`, whose `run()` crashed a
    /// test process that was opening connections on other threads (see `ChildProcess`).
    public let process: SpawnedProcess
    public let port: Int

    /// Where the process writes its standard error (its log), when `captureErrors` was set.
    private let errorsPath: String?

    /// - Parameters:
    ///   - arguments: more `serve` options, e.g. `["--idle-timeout", "1"]`.
    ///   - adminToken: `LOCGATE_ADMIN_TOKEN` for the process.
    ///   - captureErrors: keep standard error in `errors` (read it only after the process ends).
    ///   - logLevel: `--log-level` (`warning` keeps a test's output quiet).
    ///   - environment: variables for the process besides the test's own (`LOCGATE_...`).
    public init(
        port: Int, databaseURL: String, databaseName: String, arguments: [String] = [], adminToken: String = LocgateServer.adminToken,
        captureErrors: Bool = false, logLevel: String = "warning", environment extra: [String: String] = [:]
    ) throws {
        self.port = port
        var environment = extra
        environment["LOCGATE_ADMIN_TOKEN"] = adminToken
        errorsPath = captureErrors
            ? FileManager.default.temporaryDirectory.appendingPathComponent("locgate-serve-\(UUID().uuidString).log").path : nil
        process = try SpawnedProcess(
            Self.binary.path,
            ["serve", "--port", String(port), "--database-url", databaseURL, "--database-name", databaseName, "--log-level", logLevel]
                + arguments,
            environment: environment, errors: errorsPath)
    }

    deinit {
        if let errorsPath { unlink(errorsPath) }
    }

    /// What the process wrote to standard error so far (its log), when `captureErrors` was
    /// set; empty otherwise.
    public var errorOutput: String {
        guard let errorsPath, let data = FileManager.default.contents(atPath: errorsPath) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A TCP port on 127.0.0.1 that nothing is bound to now, below the kernel's ephemeral range
    /// (32768-60999 by default). A port the kernel picked for a socket bound to port 0 is an
    /// ephemeral one: once that socket closes, the suite's own client connections (libpq,
    /// URLSession) may take it before the server binds it, and the server then fails with
    /// "Address already in use". Ports below the range are never given to a connection.
    public static func freePort() -> Int? {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_000)
            if isBindable(port) { return port }
        }
        return nil
    }

    /// Whether a socket can be bound to `port` on 127.0.0.1 now.
    static func isBindable(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0
    }

    /// SIGKILL: no draining, no goodbye, as a crash or an out-of-memory kill.
    public func crash() {
        guard process.isRunning else { return }
        process.signal(SIGKILL)
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

    /// The body of a GET as text (`/metrics`).
    public static func text(_ port: Int, _ path: String) async throws -> String {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else { return "" }
        let (data, _) = try await URLSession.shared.data(from: url)
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `/readyz` answered 200 within `timeout`.
    public static func waitReady(_ port: Int, timeout: Duration = .seconds(60)) async -> Bool {
        (try? await waitUntil(timeout: timeout, poll: .milliseconds(50)) {
            if let (status, _) = try? await request("GET", port, "/readyz"), status == 200 { return true }
            return false
        }) ?? false
    }
}
