import Crypto
import EventLog
import Foundation
import PostgresClient

/// One event as an archive file holds it, and the file's two line formats.
///
/// - **Plain** (format 1, what archives of earlier releases are): PostgreSQL's CSV of every
///   column of `events`, under `EventLog.archiveHeader`. `locgate archive read` writes this
///   format, so that `\copy ... CSV HEADER` loads an archive back into a table shaped like
///   `events`.
/// - **Sealed** (format 2, what `locgate archive` writes): `position,tx_id,app_id,recorded_at`
///   in the clear, then the id of the device's key (the person's, in files of earlier
///   releases) and the other fields sealed with it (AES-256-GCM, bound to the line's position,
///   app and key id, so that a sealed text moved to another line does not open). Once the
///   person or the device is erased the key is gone, and so is everything the line said.
struct ArchiveRecord: Sendable, Equatable {
    var position: Int64
    var transactionID: String
    var appID: UUID
    var userID: String
    var deviceID: String
    var version: Int64
    var eventID: UUID
    var type: String
    var data: String
    var occurredAt: String
    var recordedAt: String

    var subject: ArchiveKeys.Subject { ArchiveKeys.Subject(appID: appID, userID: userID, deviceID: deviceID) }
    var stream: StreamKey { StreamKey(appID: appID, userID: userID, deviceID: deviceID) }

    // MARK: - Plain lines

    /// The first line of a sealed file.
    static let sealedHeader = "position,tx_id,app_id,recorded_at,key_id,sealed\n"

    /// The record as a line of the plain format (with its newline); the outcome is left empty,
    /// as archives always left it (a replay computes it again).
    var plainLine: String {
        [String(position), transactionID, appID.lowercasedText, Self.quoted(userID), Self.quoted(deviceID), String(version),
         eventID.lowercasedText, Self.quoted(type), Self.quoted(data), Self.quoted(occurredAt), Self.quoted(recordedAt), ""]
            .joined(separator: ",") + "\n"
    }

    static func quoted(_ field: String) -> String {
        "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The fields of one CSV line: quoted fields with doubled quotes inside, or bare ones.
    static func csvFields(_ line: Substring) -> [String]? {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var index = line.startIndex
        var atFieldStart = true
        while index < line.endIndex {
            let character = line[index]
            if quoted {
                if character == "\"" {
                    let next = line.index(after: index)
                    if next < line.endIndex, line[next] == "\"" {
                        field.append("\"")
                        index = next
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(character)
                }
            } else if character == "\"", atFieldStart {
                quoted = true
            } else if character == "," {
                fields.append(field)
                field = ""
                atFieldStart = true
                index = line.index(after: index)
                continue
            } else {
                field.append(character)
            }
            atFieldStart = false
            index = line.index(after: index)
        }
        guard !quoted else { return nil }
        fields.append(field)
        return fields
    }

    // MARK: - Sealed lines

    /// The record as a line of the sealed format (with its newline).
    func sealedLine(with key: ArchiveKeys.Key) throws -> String {
        let sealed = try AES.GCM.seal(
            Self.pack([userID, deviceID, String(version), eventID.lowercasedText, type, data, occurredAt]),
            using: key.key, authenticating: Self.binding(position: position, appID: appID, keyID: key.id))
        guard let combined = sealed.combined else { throw ArchiveFileError.malformed("a sealed field without its nonce") }
        return "\(position),\(transactionID),\(appID.lowercasedText),\(recordedAt),\(key.id.lowercasedText),\(combined.base64EncodedString())\n"
    }

    /// A line of the sealed format (without its newline): its key id, and a function that opens
    /// it with that key.
    struct SealedLine {
        var position: Int64
        var transactionID: String
        var appID: UUID
        var recordedAt: String
        var keyID: UUID
        var sealed: Data

        init?(_ line: Substring) {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 6, let position = Int64(fields[0]), let appID = UUID(uuidString: String(fields[2])),
                  let keyID = UUID(uuidString: String(fields[4])), let sealed = Data(base64Encoded: String(fields[5])) else { return nil }
            self.position = position
            transactionID = String(fields[1])
            self.appID = appID
            recordedAt = String(fields[3])
            self.keyID = keyID
            self.sealed = sealed
        }

        func open(with key: SymmetricKey) throws -> ArchiveRecord {
            let box = try AES.GCM.SealedBox(combined: sealed)
            let plain = try AES.GCM.open(box, using: key, authenticating: ArchiveRecord.binding(position: position, appID: appID, keyID: keyID))
            guard let fields = ArchiveRecord.unpack(plain), fields.count == 7,
                  let version = Int64(fields[2]), let eventID = UUID(uuidString: fields[3]) else {
                throw ArchiveFileError.malformed("a sealed line of position \(position) opens to something else than an event")
            }
            return ArchiveRecord(
                position: position, transactionID: transactionID, appID: appID, userID: fields[0], deviceID: fields[1],
                version: version, eventID: eventID, type: fields[4], data: fields[5], occurredAt: fields[6], recordedAt: recordedAt)
        }
    }

    static func binding(position: Int64, appID: UUID, keyID: UUID) -> Data {
        Data("\(position),\(appID.lowercasedText),\(keyID.lowercasedText)".utf8)
    }

    /// Fields as UTF-8, each after its length (four bytes, big-endian).
    static func pack(_ fields: [String]) -> Data {
        var data = Data()
        for field in fields {
            let bytes = Array(field.utf8)
            let count = UInt32(bytes.count)
            data.append(contentsOf: [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)])
            data.append(contentsOf: bytes)
        }
        return data
    }

    static func unpack(_ data: Data) -> [String]? {
        let bytes = Array(data)
        var fields: [String] = []
        var index = 0
        while index < bytes.count {
            guard index + 4 <= bytes.count else { return nil }
            let count = Int(bytes[index]) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            index += 4
            guard index + count <= bytes.count else { return nil }
            fields.append(String(decoding: bytes[index..<(index + count)], as: UTF8.self))
            index += count
        }
        return fields
    }
}

extension ArchiveRecord {
    // The initialisers beside the memberwise one, which they would hide inside the struct.

    /// An event of the log as its archive line holds it.
    init(_ event: RecordedEvent) {
        position = event.logPosition.position
        transactionID = String(event.logPosition.transactionID)
        appID = event.stream.appID
        userID = event.stream.userID
        deviceID = event.stream.deviceID
        version = event.version
        eventID = event.id
        type = event.type
        data = event.data
        occurredAt = PostgresTimestamp.format(event.occurredAt)
        recordedAt = PostgresTimestamp.format(event.recordedAt)
    }

    /// A line of the plain format (without its newline), or nil when it is not one.
    init?(plainLine line: Substring) {
        guard let fields = Self.csvFields(line), fields.count == 12,
              let position = Int64(fields[0]), let appID = UUID(uuidString: fields[2]),
              let version = Int64(fields[5]), let eventID = UUID(uuidString: fields[6]) else { return nil }
        self.init(
            position: position, transactionID: fields[1], appID: appID, userID: fields[3], deviceID: fields[4], version: version,
            eventID: eventID, type: fields[7], data: fields[8], occurredAt: fields[9], recordedAt: fields[10])
    }
}

/// Why an archive file could not be read or rewritten.
public enum ArchiveFileError: Error, CustomStringConvertible {
    case unreadable(String)
    case malformed(String)
    case notRecorded(String)

    public var description: String {
        switch self {
        case .unreadable(let message): "the archive file: \(message)"
        case .malformed(let message): "the archive file is not one locgate wrote: \(message)"
        case .notRecorded(let message): "the archive file is not recorded in event_archives: \(message)"
        }
    }
}
