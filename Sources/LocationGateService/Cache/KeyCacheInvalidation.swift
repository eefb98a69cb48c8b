/// `locgate_keys`: a key was revoked. The payload is its hash, and that key alone is
/// forgotten; any other payload (an older server's) forgets every key.
struct KeyCacheInvalidation: Sendable {
    let keys: APIKeys

    func apply(_ payload: String) {
        if Self.isDigest(payload) {
            keys.forget(digest: payload)
        } else {
            keys.invalidateAll()
        }
    }

    /// 64 lower-case hex digits: a key's SHA-256 as `APIKeys` stores it.
    static func isDigest(_ payload: String) -> Bool {
        payload.utf8.count == 64 && payload.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
