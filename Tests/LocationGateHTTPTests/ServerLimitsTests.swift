import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The server's own bounds, against a real `locgate serve`: idle and trickling connections are
/// closed, thousands of idle sockets do not stop gates, and a weak admin token is refused.
@Suite("Server limits: idle timeout, connection load, admin token strength", .timeLimit(.minutes(3)))
struct ServerLimitsTests {
    /// A blocking TCP socket to 127.0.0.1:port, or nil.
    static func connect(_ port: Int) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Whether the peer closes the socket within `seconds` (a read returns end of file).
    static func closedByPeer(_ descriptor: Int32, within seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    static func startServer(_ arguments: [String] = []) async throws -> LocgateServer {
        try #require(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first")
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        // A port the kernel has free now (a fixed range collided with client sockets).
        let port = try #require(LocgateServer.freePort(), "no free port")
        let server = try LocgateServer(port: port, databaseURL: url, databaseName: configuration.overrides["dbname"] ?? "", arguments: arguments)
        let ready = await LocgateServer.waitReady(port)
        try #require(ready, "locgate serve did not become ready on port \(port)")
        return server
    }

    @Test("A connection that sends nothing, and one whose request head trickles in, are closed after the idle timeout")
    func idleConnectionsClose() async throws {
        let server = try await Self.startServer(["--idle-timeout", "1"])
        defer { server.stop() }
        let silent = try #require(Self.connect(server.port))
        defer { close(silent) }
        let trickling = try #require(Self.connect(server.port))
        defer { close(trickling) }
        let partial = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        #expect(send(trickling, partial, partial.count, 0) == partial.count)
        // Generous: 1 s of idleness, and a loaded machine's scheduling on top.
        #expect(Self.closedByPeer(silent, within: 15), "an idle socket was kept open")
        #expect(Self.closedByPeer(trickling, within: 15), "a trickling request head was kept open")
    }

    @Test("2,000 idle sockets do not stop gates: the app is created and a gate answered while they are open")
    func idleSocketsDoNotStopGates() async throws {
        let server = try await Self.startServer()
        defer { server.stop() }
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<2_000 {
            guard let socket = Self.connect(server.port) else { break }
            sockets.append(socket)
        }
        #expect(sockets.count == 2_000)
        let (created, app) = try await LocgateServer.request(
            "POST", server.port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "limits"}"#)
        #expect(created == 201)
        let key = try #require(app["apiKey"] as? String)
        let (status, gates) = try await LocgateServer.request("GET", server.port, "/v1/users/u/devices/d/gates", key: key)
        #expect(status == 200)
        #expect(gates["status"] as? String == "notDetermined")
    }

    @Test("serve refuses an admin token shorter than 32 bytes, saying why")
    func weakAdminTokenRefused() async throws {
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let server = try LocgateServer(
            port: try #require(LocgateServer.freePort(), "no free port"), databaseURL: url, databaseName: configuration.overrides["dbname"] ?? "",
            adminToken: "change-me", captureErrors: true)
        defer { server.stop() }
        #expect(try await waitUntil(timeout: .seconds(30)) { !server.process.isRunning }, "serve started with a weak admin token")
        #expect(server.process.terminationStatus != 0)
        let output = server.errorOutput
        #expect(output.contains("LOCGATE_ADMIN_TOKEN"), "\(output)")
    }
}
