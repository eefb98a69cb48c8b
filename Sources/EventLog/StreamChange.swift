import Foundation
import PostgresClient

/// A stream that an append moved to a new version: what the append's NOTIFY carries, so that
/// listeners (the gate caches of other processes) learn of the change the moment it commits,
/// without waiting for the global order's horizon.
public struct StreamChange: Sendable, Hashable {
    public var stream: StreamKey
    public var version: Int64

    public init(stream: StreamKey, version: Int64) {
        self.stream = stream
        self.version = version
    }

    /// Payloads of at most `limit` bytes: one line per stream, `app<TAB>user<TAB>device<TAB>version`.
    /// (Stream ids never hold tabs or newlines: the API allows `[A-Za-z0-9._:@-]` only.) With an
    /// `origin`, each payload starts with the line `originLine(origin)`, which `parse` skips (it
    /// has no tabs) and by which the appending process knows its own appends (`isFrom`).
    static func payloads(_ changes: [StreamChange], origin: String? = nil, limit: Int = 7900) -> [String] {
        let first = origin.map(originLine) ?? ""
        var payloads: [String] = []
        var current = first
        for change in changes {
            let line = "\(change.stream.appID.lowercasedText)\t\(change.stream.userID)\t\(change.stream.deviceID)\t\(change.version)\n"
            if current.utf8.count > first.utf8.count && current.utf8.count + line.utf8.count > limit {
                payloads.append(current)
                current = first
            }
            current += line
        }
        if current.utf8.count > first.utf8.count { payloads.append(current) }
        return payloads
    }

    /// The first line of the payloads an append from `origin` sends.
    public static func originLine(_ origin: String) -> String { "#\(origin)\n" }

    /// Whether `payload` starts with `originLine` (its UTF-8 bytes, given so that a listener
    /// makes them once).
    public static func isFrom(_ originLine: [UInt8], payload: String) -> Bool {
        payload.utf8.starts(with: originLine)
    }

    /// The changes in a payload; lines that do not parse are skipped.
    /// Split on the UTF-8 bytes of the separators, not on `Character`s: every server reads every
    /// append's payload, and the grapheme-aware split was 1.5% of a busy server's time.
    public static func parse(_ payload: String) -> [StreamChange] {
        payload.utf8.split(separator: UInt8(ascii: "\n")).compactMap { line in
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false).map { String(Substring($0)) }
            guard fields.count == 4, let appID = UUID(postgresUUIDText: fields[0]), let version = Int64(fields[3]) else { return nil }
            return StreamChange(stream: StreamKey(appID: appID, userID: fields[1], deviceID: fields[2]), version: version)
        }
    }
}
