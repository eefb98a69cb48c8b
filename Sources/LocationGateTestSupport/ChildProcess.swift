import Foundation

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
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw Failure(description: "\(executable) did not start: \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw Failure(description: "waitpid failed: errno \(errno)") }
        }
        let output = FileManager.default.contents(atPath: outputPath) ?? Data()
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        let signal = status & 0x7f
        return Result(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, output: output)
    }
}
