import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A short-lived child process run to its end with its standard output read whole, started
/// with `posix_spawnp` directly. Foundation's `Process.run()` lists the parent's open
/// descriptors to close them in the child, and in a test process whose other threads open and
/// close hundreds of database connections meanwhile it wrote past its buffer (a SIGSEGV inside
/// `Process.run`). Here nothing is listed: descriptors without close-on-exec are inherited,
/// which the children the tests run (`pg_dump`, `locgate` commands) ignore. The output is
/// small (a test database's dump, a command's answer) and goes through a temporary file.
public enum ChildProcess {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// What a child left: its exit status (128 + the signal when a signal ended it) and
    /// everything it wrote to standard output.
    public struct Result: Sendable {
        public var status: Int32
        public var output: Data
    }

    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments` and this
    /// process's environment, its standard error to /dev/null, and waits for it.
    public static func run(_ executable: String, _ arguments: [String]) throws -> Result {
        // The output goes to a file the child opens: the parent holds no descriptor of it that
        // a child spawned at the same moment on another thread could inherit.
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("locgate-child-\(UUID().uuidString)").path
        defer { unlink(outputPath) }
        let pid = try spawn(executable, arguments, output: outputPath, errors: nil)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw Failure(description: "waitpid failed: errno \(errno)") }
        }
        let output = FileManager.default.contents(atPath: outputPath) ?? Data()
        return Result(status: exitStatus(status), output: output)
    }

    /// Starts `executable` with `arguments` and this process's environment with `environment`
    /// over it, standard output to `output` and standard error to `errors` (files the child
    /// creates; /dev/null when nil), and returns its process id without waiting.
    static func spawn(
        _ executable: String, _ arguments: [String], environment extra: [String: String] = [:], output: String?, errors: String?
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, path) in [(Int32(1), output), (2, errors)] {
            if let path {
                posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            } else {
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
            }
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }.map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw Failure(description: "\(executable) did not start: \(String(cString: strerror(spawned)))") }
        return pid
    }

    /// A `waitpid` status as an exit status: the code, or 128 + the signal that ended it
    /// (WIFEXITED and WEXITSTATUS, which Swift does not import).
    static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// A long-running child started as `ChildProcess.run` starts one (`locgate serve` for the tests
/// that need processes), with what `Process` offered them: whether it runs, its exit status,
/// SIGTERM and SIGKILL, and waiting for its end.
public final class SpawnedProcess: Sendable {
    public let processIdentifier: pid_t
    /// The exit status once the child has been reaped.
    private let exit = Mutex<Int32?>(nil)

    /// Starts `executable`; see `ChildProcess.spawn`.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], errors: String? = nil) throws {
        processIdentifier = try ChildProcess.spawn(executable, arguments, environment: environment, output: nil, errors: errors)
    }

    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The exit status (128 + the signal when a signal ended it), waiting for the end if need be.
    public var terminationStatus: Int32 { reap(blocking: true) ?? -1 }

    /// SIGTERM: a graceful shutdown.
    public func terminate() {
        signal(SIGTERM)
    }

    public func signal(_ number: Int32) {
        guard isRunning else { return }
        kill(processIdentifier, number)
    }

    public func waitUntilExit() {
        _ = reap(blocking: true)
    }

    /// The exit status if the child has ended (reaping it once), nil while it runs.
    private func reap(blocking: Bool) -> Int32? {
        exit.withLock { exit in
            if let exit { return exit }
            var status: Int32 = 0
            while true {
                let reaped = waitpid(processIdentifier, &status, blocking ? 0 : WNOHANG)
                if reaped == processIdentifier {
                    exit = ChildProcess.exitStatus(status)
                    return exit
                }
                if reaped == -1 && errno == EINTR { continue }
                return nil
            }
        }
    }

    deinit {
        if reap(blocking: false) == nil {
            kill(processIdentifier, SIGKILL)
            _ = reap(blocking: true)
        }
    }
}
