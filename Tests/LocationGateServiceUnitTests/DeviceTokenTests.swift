import Crypto
import Foundation
import LocationGateService
import Testing

/// Device tokens: HS256 compact JWTs a backend signs with a bound key's token secret.
@Suite("Device tokens", .timeLimit(.minutes(1)))
struct DeviceTokenTests {
    static let secret = "lgs_" + String(repeating: "s", count: 43)
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    @Test("A token signed with the secret verifies and names its user and device")
    func valid() throws {
        let token = DeviceToken.sign(userID: "u-1", deviceID: "d-1", expires: Self.now.addingTimeInterval(3600), secret: Self.secret)
        let verified = try DeviceToken.verify(token, secret: Self.secret, now: Self.now)
        #expect(verified.userID == "u-1" && verified.deviceID == "d-1")
        #expect(verified.covers(userID: "u-1", deviceID: "d-1"))
        #expect(!verified.covers(userID: "u-1", deviceID: "d-2"))
        #expect(!verified.covers(userID: "u-2", deviceID: "d-1"))
        let anyDevice = try DeviceToken.verify(
            DeviceToken.sign(userID: "u-1", expires: Self.now.addingTimeInterval(60), secret: Self.secret), secret: Self.secret, now: Self.now)
        #expect(anyDevice.covers(userID: "u-1", deviceID: "d-9") && !anyDevice.covers(userID: "u-2", deviceID: "d-9"))
    }

    @Test("Another secret, alg none or HS512, an edited claim, expiry past or beyond 24 hours, malformed text: each refused with its reason")
    func refused() throws {
        let expires = Self.now.addingTimeInterval(3600)
        let good = DeviceToken.sign(userID: "u-1", expires: expires, secret: Self.secret)
        #expect(throws: DeviceToken.Refusal.signature) {
            try DeviceToken.verify(DeviceToken.sign(userID: "u-1", expires: expires, secret: "lgs_other"), secret: Self.secret, now: Self.now)
        }
        let parts = good.split(separator: ".").map(String.init)
        func encode(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        #expect(throws: DeviceToken.Refusal.algorithm) {
            try DeviceToken.verify("\(encode(#"{"alg":"none"}"#)).\(parts[1]).\(parts[2])", secret: Self.secret, now: Self.now)
        }
        #expect(throws: DeviceToken.Refusal.algorithm) {
            try DeviceToken.verify("\(encode(#"{"alg":"HS512"}"#)).\(parts[1]).\(parts[2])", secret: Self.secret, now: Self.now)
        }
        // Another user in the claims, the signature kept.
        let forged = encode(#"{"exp":\#(Int(expires.timeIntervalSince1970)),"sub":"u-2"}"#)
        #expect(throws: DeviceToken.Refusal.signature) {
            try DeviceToken.verify("\(parts[0]).\(forged).\(parts[2])", secret: Self.secret, now: Self.now)
        }
        #expect(throws: DeviceToken.Refusal.expired) {
            try DeviceToken.verify(good, secret: Self.secret, now: expires.addingTimeInterval(1))
        }
        #expect(throws: DeviceToken.Refusal.tooLongLived) {
            try DeviceToken.verify(
                DeviceToken.sign(userID: "u-1", expires: Self.now.addingTimeInterval(2 * 86_400), secret: Self.secret), secret: Self.secret, now: Self.now)
        }
        for text in ["", "a.b", "a.b.c.d", "\(parts[0]).\(parts[1]).", "\(parts[0])!.\(parts[1]).\(parts[2])", String(repeating: "a", count: 5000)] {
            #expect(throws: DeviceToken.Refusal.malformed) { try DeviceToken.verify(text, secret: Self.secret, now: Self.now) }
        }
    }

    @Test("sub must be an identifier and exp is required, both checked after the signature")
    func claims() throws {
        func signed(_ claims: String) -> String {
            func encode(_ data: Data) -> String {
                data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            }
            let head = encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8)), body = encode(Data(claims.utf8))
            let mac = HMAC<SHA256>.authenticationCode(for: Data("\(head).\(body)".utf8), using: SymmetricKey(data: Data(Self.secret.utf8)))
            return "\(head).\(body).\(encode(Data(mac)))"
        }
        let exp = Int(Self.now.timeIntervalSince1970) + 60
        #expect(throws: DeviceToken.Refusal.self) { try DeviceToken.verify(signed(#"{"exp":\#(exp)}"#), secret: Self.secret, now: Self.now) }
        #expect(throws: DeviceToken.Refusal.self) { try DeviceToken.verify(signed(#"{"sub":"a b","exp":\#(exp)}"#), secret: Self.secret, now: Self.now) }
        #expect(throws: DeviceToken.Refusal.self) { try DeviceToken.verify(signed(#"{"sub":"u-1"}"#), secret: Self.secret, now: Self.now) }
        #expect(throws: DeviceToken.Refusal.self) { try DeviceToken.verify(signed(#"{"sub":"u-1","did":7,"exp":\#(exp)}"#), secret: Self.secret, now: Self.now) }
        // A third-party library's token with extra claims is fine.
        let other = try DeviceToken.verify(signed(#"{"sub":"u-1","exp":\#(exp),"iat":1,"iss":"backend"}"#), secret: Self.secret, now: Self.now)
        #expect(other.userID == "u-1" && other.deviceID == nil)
    }

    @Test("A header with crit is refused, whatever it lists and although the signature matches (RFC 7515 §4.1.11); the same token without it verifies")
    func criticalHeader() throws {
        func encode(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        func signed(header: String) -> String {
            let exp = Int(Self.now.timeIntervalSince1970) + 60
            let head = encode(Data(header.utf8)), body = encode(Data(#"{"sub":"u-1","exp":\#(exp)}"#.utf8))
            let mac = HMAC<SHA256>.authenticationCode(for: Data("\(head).\(body)".utf8), using: SymmetricKey(data: Data(Self.secret.utf8)))
            return "\(head).\(body).\(encode(Data(mac)))"
        }
        for header in [
            #"{"alg":"HS256","typ":"JWT","crit":["exp"]}"#, #"{"alg":"HS256","crit":["b64"],"b64":false}"#,
            #"{"alg":"HS256","crit":[]}"#, #"{"alg":"HS256","crit":null}"#,
        ] {
            #expect(throws: DeviceToken.Refusal.criticalExtensions, "\(header)") {
                try DeviceToken.verify(signed(header: header), secret: Self.secret, now: Self.now)
            }
        }
        #expect(try DeviceToken.verify(signed(header: #"{"alg":"HS256","typ":"JWT"}"#), secret: Self.secret, now: Self.now).userID == "u-1")
    }
}
