#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// The process's file-descriptor limit, raised to its hard limit at start (a server holds a
/// descriptor per connection and push stream; the soft limit is often 1,024), and the
/// connection cap fitted below it with room for database connections and files.
enum FileLimit {
    static let reserved = 256

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif

    static func connections(wanted: Int, logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return wanted }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        let available = Int(clamping: limit.rlim_cur) - reserved
        guard available < wanted else { return wanted }
        let fitted = max(16, available)
        logger.warning(
            "the connection cap is lowered to fit the file-descriptor limit",
            metadata: ["wanted": "\(wanted)", "connections": "\(fitted)", "limit": "\(limit.rlim_cur)"])
        return fitted
    }
}
