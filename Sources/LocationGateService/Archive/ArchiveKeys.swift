import Crypto
import Foundation
import PostgresClient

/// The keys archive files are sealed with (`archive_keys`, migrations 013 and 017): one per
/// device of a person.
///
/// An archive seals each event's identifying fields with its device's key; an erasure deletes
/// the keys with the rest of the person (`locgate_erase_user`), or the one key with the device
/// (`locgate_erase_device`), and from then on every archive file written before holds them only
/// as ciphertext nobody can open: crypto-shredding, so that files outside the database forget
/// with it (docs/privacy.md). Keys of earlier releases were one per person (no device): they
/// still open the lines they sealed, and erasing any device of their person deletes them.
///
/// Keys are looked up a page of events at a time and kept in a bounded dictionary: an archive
/// of millions of people does not hold all their keys at once.
struct ArchiveKeys {
    /// What a key seals: one device of a person.
    struct Subject: Hashable, Sendable {
        var appID: UUID
        var userID: String
        var deviceID: String
    }

    struct Key {
        var id: UUID
        var key: SymmetricKey
    }

    /// How many keys are remembered before the dictionaries start over.
    static let remembered = 200_000

    private var bySubject: [Subject: Key] = [:]
    private var byID: [UUID: SymmetricKey] = [:]
    /// Key ids the database no longer has: their people were erased.
    private var shredded: Set<UUID> = []

    /// The keys of `subjects`, creating those that do not exist yet (an existing key wins a
    /// race: the insert does nothing on conflict and the stored key is read back).
    mutating func ensure(_ subjects: Set<Subject>, on connection: PostgresConnection) throws -> [Subject: Key] {
        forgetIfFull()
        let missing = subjects.filter { bySubject[$0] == nil }
        for chunk in Array(missing).chunks(of: 2000) {
            let fresh = chunk.map { _ in (UUID(), SymmetricKey(size: .bits256)) }
            try connection.query(
                """
                INSERT INTO archive_keys (id, app_id, user_id, device_id, key)
                SELECT i, a, u, d, decode(k, 'base64')
                FROM unnest(\(PostgresArray(fresh.map(\.0))), \(PostgresArray(chunk.map(\.appID))),
                            \(PostgresArray(chunk.map(\.userID))), \(PostgresArray(chunk.map(\.deviceID))),
                            \(PostgresArray(fresh.map { Self.base64($0.1) })))
                    AS n(i, a, u, d, k)
                ON CONFLICT (app_id, user_id, device_id) DO NOTHING
                """)
            for row in try connection.query(
                """
                SELECT k.app_id, k.user_id, k.device_id, k.id, encode(k.key, 'base64') FROM archive_keys k
                JOIN unnest(\(PostgresArray(chunk.map(\.appID))), \(PostgresArray(chunk.map(\.userID))),
                            \(PostgresArray(chunk.map(\.deviceID)))) AS p(a, u, d)
                  ON k.app_id = p.a AND k.user_id = p.u AND k.device_id = p.d
                """) {
                let subject = Subject(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2))
                let key = Key(id: try row.decode(3), key: try Self.key(try row.decode(4)))
                bySubject[subject] = key
                byID[key.id] = key.key
            }
        }
        return subjects.reduce(into: [:]) { keys, subject in keys[subject] = bySubject[subject] }
    }

    /// The keys with these ids that still exist; the others' people were erased.
    mutating func lookUp(_ ids: Set<UUID>, on connection: PostgresConnection) throws -> [UUID: SymmetricKey] {
        forgetIfFull()
        let unknown = ids.filter { byID[$0] == nil && !shredded.contains($0) }
        for chunk in Array(unknown).chunks(of: 5000).map(Array.init) {
            var found: Set<UUID> = []
            for row in try connection.query(
                "SELECT id, encode(key, 'base64') FROM archive_keys WHERE id = ANY(\(PostgresArray(chunk)))"
            ) {
                let id: UUID = try row.decode(0)
                byID[id] = try Self.key(try row.decode(1))
                found.insert(id)
            }
            shredded.formUnion(chunk.filter { !found.contains($0) })
        }
        return ids.reduce(into: [:]) { keys, id in keys[id] = byID[id] }
    }

    private mutating func forgetIfFull() {
        if byID.count > Self.remembered || shredded.count > Self.remembered {
            bySubject = [:]
            byID = [:]
            shredded = []
        }
    }

    static func base64(_ key: SymmetricKey) -> String {
        key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    static func key(_ base64: String) throws -> SymmetricKey {
        guard let data = Data(base64Encoded: base64), data.count == 32 else {
            throw PostgresError(.decoding, message: "an archive key is not 32 bytes of base64")
        }
        return SymmetricKey(data: data)
    }
}
