import Foundation
import Testing

@testable import LocationAuthorization

/// SPEC §1 "Strings": every client string is UTF-8 without control characters and bounded in
/// bytes; anything else is refused with the field named, never stored altered.
@Suite("Client strings (SPEC §1)", .timeLimit(.minutes(1)))
struct ClientTextTests {
    /// Decodes one event whose `data` is `data` (JSON text).
    static func decode(_ type: String, _ data: String) throws -> LocationEvent {
        try EventCoding.decode(LocationEvent.self, from: Data(#"{"type": "\#(type)", "data": \#(data)}"#.utf8))
    }

    /// The field an event's refusal names, or nil when it was accepted.
    static func refusedField(_ type: String, _ data: String) -> String? {
        do {
            _ = try decode(type, data)
            return nil
        } catch let error as EventValidationError {
            return error.field
        } catch {
            return "undecodable"
        }
    }

    @Test("appVersion: 1 to 64 bytes (not characters), no control characters")
    func appVersion() throws {
        #expect(Self.refusedField("contextReported", #"{"appVersion": "4.2 (beta ✓)"}"#) == nil)
        #expect(Self.refusedField("contextReported", #"{"appVersion": "\#(String(repeating: "a", count: 64))"}"#) == nil)
        #expect(Self.refusedField("contextReported", #"{"appVersion": "\#(String(repeating: "a", count: 65))"}"#) == "data.appVersion")
        // 33 characters, 66 bytes.
        #expect(Self.refusedField("contextReported", #"{"appVersion": "\#(String(repeating: "é", count: 33))"}"#) == "data.appVersion")
        #expect(Self.refusedField("contextReported", #"{"appVersion": ""}"#) == "data.appVersion")
        for control in ["\\u0000", "\\u0001", "\\t", "\\n", "\\u001f", "\\u007f"] {
            #expect(Self.refusedField("contextReported", #"{"appVersion": "a\#(control)b"}"#) == "data.appVersion", "\(control)")
        }
        // U+0080 and above are not controls in SPEC §1's sense.
        #expect(Self.refusedField("contextReported", #"{"appVersion": "a\u0080b"}"#) == nil)
    }

    @Test("Keys: purposeKey, usageDescriptions and temporaryUsagePurposeKeys are 1 to 128 bytes of A-Z a-z 0-9 . _ -, 64 items at most")
    func keys() {
        let long = String(repeating: "k", count: 128)
        #expect(Self.refusedField("authorizationRequested", #"{"request": "temporaryFullAccuracy", "purposeKey": "\#(long)"}"#) == nil)
        #expect(Self.refusedField("authorizationRequested", #"{"request": "temporaryFullAccuracy", "purposeKey": "\#(long)k"}"#) == "data.purposeKey")
        for bad in ["a b", "a:b", "a/b", "é", "a\\u0000b", ""] {
            #expect(Self.refusedField("authorizationRequested", #"{"request": "temporaryFullAccuracy", "purposeKey": "\#(bad)"}"#) == "data.purposeKey", "\(bad)")
        }
        #expect(Self.refusedField("contextReported", #"{"usageDescriptions": ["NSLocationWhenInUseUsageDescription", "x y"]}"#) == "data.usageDescriptions[1]")
        #expect(Self.refusedField("contextReported", #"{"temporaryUsagePurposeKeys": ["Nav\\u0000"]}"#) == "data.temporaryUsagePurposeKeys[0]")
        let many = (0..<65).map { #""k\#($0)""# }.joined(separator: ",")
        #expect(Self.refusedField("contextReported", #"{"usageDescriptions": [\#(many)]}"#) == "data.usageDescriptions")
        let enough = (0..<64).map { #""k\#($0)""# }.joined(separator: ",")
        #expect(Self.refusedField("contextReported", #"{"temporaryUsagePurposeKeys": [\#(enough)]}"#) == nil)
    }

    @Test("osVersion: up to three dot-separated numbers of 1 to 4 digits")
    func osVersion() {
        for good in ["17", "17.4", "17.4.1", "9999.0.1"] {
            #expect(Self.refusedField("contextReported", #"{"osVersion": "\#(good)"}"#) == nil, "\(good)")
        }
        for bad in ["", "17.", ".4", "17.4.1.2", "12345", "17.x", "١٧", "17\\u00004", "+17", "17 .4"] {
            #expect(Self.refusedField("contextReported", #"{"osVersion": "\#(bad)"}"#) == "data.osVersion", "\(bad)")
        }
    }

    @Test("userId and deviceId: 1 to 128 bytes of A-Z a-z 0-9 . _ : @ -")
    func identifiers() {
        #expect(EventSubmission.isValidIdentifier(String(repeating: "u", count: 128)))
        #expect(!EventSubmission.isValidIdentifier(String(repeating: "u", count: 129)))
        for bad in ["", "a b", "a\u{0}b", "é", "a/b", "a\u{7f}"] {
            #expect(!EventSubmission.isValidIdentifier(bad), "\(bad)")
        }
    }

    @Test("ClientText checks bytes and controls and names the field in its message")
    func checks() throws {
        try ClientText.check("名前", field: "name", bytes: 1...6)
        #expect(throws: EventValidationError.self) { try ClientText.check("名前!", field: "name", bytes: 1...6) }
        do {
            try ClientText.check("abc\u{0}def", field: "name", bytes: 1...200)
            Issue.record("a NUL was accepted")
        } catch {
            #expect(error.field == "name" && error.message.hasPrefix("name:"))
        }
        try ClientText.checkKey("a.b_c-D9", field: "key", bytes: 1...64)
        #expect(throws: EventValidationError.self) { try ClientText.checkKey(String(repeating: "k", count: 65), field: "key", bytes: 1...64) }
    }
}
