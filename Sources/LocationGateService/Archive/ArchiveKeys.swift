import Crypto
import Foundation
import PostgresClient

/// The per-person keys archive files are sealed with (`archive_keys`, migration 013).
///
/// An archive seals each event's identifying fields with its person's key; an erasure deletes
/// the key with the rest of the person (`locgate_erase_user`), and from then on every archive
/// file written before holds that person only as ciphertext nobody can open: crypto-shredding,
/// so that files outside the database forget with it (docs/privacy.md).
///
/// Keys are looked up a page of events at a time and kept in a bounded dictionary: an archive
/// of millions of people does not hold all their keys at once.
struct ArchiveKeys {
    struct Person: Hashable, Sendable {
        var appID: UUID
        var userID: String
    }

    struct Key {
        var id: UUID
        var key: SymmetricKey
    }

    /// How many keys are remembered before the dictionaries start over.
    static let remembered = 200_000

    private var byPerson: [Person: Key] = [:]
    private var byID: [UUID: SymmetricKey] = [:]
    /// Key ids the database no longer has: their people were erased.
    private var shredded: Set<UUID> = []

    /// The keys of `persons`, creating those that do not exist yet (an existing key wins a
    /// race: the insert does nothing on conflict and the stored key is read back).
    mutating func ensure(_ persons: Set<Person>, on connection: PostgresConnection) throws -> [Person: Key] {
        forgetIfFull()
        let missing = persons.filter { byPerson[$0] == nil }
        for chunk in Array(missing).chunks(of: 2000) {
            let fresh = chunk.map { _ in (UUID(), SymmetricKey(size: .bits256)) }
            try connection.query(
                """
                INSERT INTO archive_keys (id, app_id, user_id, key)
                SELECT i, a, u, decode(k, 'base64')
                FROM unnest(\(PostgresArray(fresh.map(\.0))), \(PostgresArray(chunk.map(\.appID))),
                            \(PostgresArray(chunk.map(\.userID))), \(PostgresArray(fresh.map { Self.base64($0.1) })))
                    AS n(i, a, u, k)
                ON CONFLICT (app_id, user_id) DO NOTHING
                """)
            for row in try connection.query(
                """
                SELECT k.app_id, k.user_id, k.id, encode(k.key, 'base64') FROM archive_keys k
                JOIN unnest(\(PostgresArray(chunk.map(\.appID))), \(PostgresArray(chunk.map(\.userID)))) AS p(a, u)
                  ON k.app_id = p.a AND k.user_id = p.u
                """) {
                let person = Person(appID: try row.decode(0), userID: try row.decode(1))
                let key = Key(id: try row.decode(2), key: try Self.key(try row.decode(3)))
                byPerson[person] = key
                byID[key.id] = key.key
            }
        }
        return persons.reduce(into: [:]) { keys, person in keys[person] = byPerson[person] }
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
            byPerson = [:]
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
