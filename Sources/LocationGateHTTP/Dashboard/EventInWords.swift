import LocationAuthorization
import LocationGateJSON

/// A device's event as the device page writes it (SPEC §8): a sentence ("Asked for When In
/// Use", "Chose Allow While Using", "Settings: precise location off") and its data as named
/// fields ("request: whenInUse"), never as raw JSON, so that support and privacy reviewers read
/// a timeline without reading JSON. The switch over `EventType` is exhaustive: a new type does
/// not compile until it is worded. Values a client chose (an app version, a purpose key) are
/// text; the templates escape them.
enum EventInWords {
    /// The event as a sentence: what the app or the person did, in the words of the screens
    /// they saw; API names where no screen names the thing (a status, a service).
    static func sentence(type: String, data: JSONNode) -> String {
        guard let kind = EventType(rawValue: type) else { return words(type) }
        func string(_ name: String) -> String? { data[name]?.string }
        func flag(_ name: String) -> Bool? { data[name]?.bool }
        func list(_ name: String) -> [String] { data[name]?.array?.map(text) ?? [] }
        switch kind {
        case .contextReported:
            var parts: [String] = []
            if let platform = string("platform") {
                let release = string("osVersion") ?? data["apiLevel"].map { "API " + text($0) }
                parts.append([platform, release].compactMap { $0 }.joined(separator: " "))
            }
            if let version = string("appVersion") { parts.append("app " + version) }
            return parts.isEmpty ? "Reported its context" : "Reported its context: " + parts.joined(separator: ", ")
        case .authorizationRequested:
            switch string("request") {
            case "whenInUse"?: return "Asked for When In Use"
            case "always"?: return "Asked for Always"
            case "temporaryFullAccuracy"?: return "Asked for temporary full accuracy"
            case let other?: return "Asked for " + words(other)
            case nil: return "Asked for authorization"
            }
        case .promptResponded:
            return string("choice").map { "Chose " + choice($0) } ?? "Answered the prompt"
        case .alwaysEventOccurred:
            return string("service").map { "Always event from " + $0 } ?? "Always event"
        case .appStateChanged:
            switch string("state") {
            case "foreground"?: return "Came to the foreground"
            case "background"?: return "Went to the background"
            case "terminated"?: return "Was terminated"
            case let other?: return "App state: " + other
            case nil: return "App state changed"
            }
        case .settingsChanged:
            var parts: [String] = []
            if let authorization = string("authorization") { parts.append("location " + setting(authorization)) }
            if let precise = flag("preciseLocation") { parts.append("precise location " + (precise ? "on" : "off")) }
            return parts.isEmpty ? "Settings changed" : "Settings: " + parts.joined(separator: ", ")
        case .locationServicesChanged:
            return "Location Services turned " + (flag("enabled") == false ? "off" : "on")
        case .restrictionChanged:
            return flag("restricted") == false ? "Location restriction lifted" : "Location restricted"
        case .statusObserved:
            let status = string("status").map { "Observed status " + $0 } ?? "Observed a status"
            return status + (string("accuracy").map { ", \($0) accuracy" } ?? "")
        case .serviceSessionChanged:
            let session = string("session").map { "Service session " + $0 } ?? "Service session"
            return session + (string("action").map { ": " + $0 } ?? " changed")
        case .backgroundActivityChanged:
            return "Background activity session " + (flag("active") == false ? "ended" : "started")
        case .diagnosticObserved:
            return string("source").map { "Diagnostic from " + $0 } ?? "Diagnostic"
        case .permissionsRequested:
            let permissions = list("permissions")
            return permissions.isEmpty ? "Asked for permissions" : "Asked for permissions: " + permissions.joined(separator: ", ")
        case .permissionsResult:
            let granted = list("granted"), denied = list("denied")
            var parts: [String] = []
            if !granted.isEmpty { parts.append("granted " + granted.joined(separator: ", ")) }
            if !denied.isEmpty { parts.append("denied " + denied.joined(separator: ", ")) }
            return "Permission result: " + (parts.isEmpty ? "nothing granted" : parts.joined(separator: "; "))
        case .permissionsObserved:
            let granted = list("granted")
            let location = flag("locationEnabled").map { $0 ? ", location on" : ", location off" } ?? ""
            return "Observed permissions: " + (granted.isEmpty ? "none" : granted.joined(separator: ", ")) + location
        case .permissionsReset:
            return string("reason").map { "Permissions reset (\($0))" } ?? "Permissions reset"
        case .locationButtonSession:
            return string("state").map { "Location button session " + $0 } ?? "Location button session"
        case .locationButtonResult:
            return flag("granted") == true ? "Location button: granted" : "Location button: not granted"
        }
    }

    /// The event's data as named fields, in the order it is stored, each value as text:
    /// a list's items joined with commas, an object's members as "name: value" in
    /// parentheses, never JSON.
    static func fields(_ data: JSONNode) -> [(name: String, text: String)] {
        guard case .object(let members) = data else { return data.isNull ? [] : [(name: "data", text: text(data))] }
        return members.map { (name: $0.key, text: text($0.value)) }
    }

    /// A value as text: a string as it is, a whole number without decimals, true or false,
    /// "none" for null, a list's items and an object's "name: value" members separated by
    /// commas.
    static func text(_ value: JSONNode) -> String {
        switch value {
        case .null: return "none"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number): return number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let string): return string
        case .array(let items): return items.isEmpty ? "none" : items.map(text).joined(separator: ", ")
        case .object(let members):
            return "(" + members.map { "\($0.key): \(text($0.value))" }.joined(separator: ", ") + ")"
        }
    }

    /// A choice as its button reads: "Allow While Using", "Don't Allow".
    static func choice(_ name: String) -> String {
        switch name {
        case "dontAllow": "Don't Allow"
        case "changeToAlwaysAllow": "Change to Always Allow"
        case "keepOnlyWhileUsing": "Keep Only While Using"
        case "keepReducedAccuracy": "Keep Reduced Accuracy"
        case "allowFullAccuracy": "Allow Full Accuracy"
        default: words(name)
        }
    }

    /// A Settings authorization as the Settings app lists it.
    static func setting(_ name: String) -> String {
        switch name {
        case "never": "Never"
        case "askNextTime": "Ask Next Time Or When I Share"
        case "whileUsing": "While Using the App"
        case "always": "Always"
        case "askEveryTime": "Ask every time"
        default: words(name)
        }
    }

    /// An API name split into capitalised words: "allowWhileUsing" → "Allow While Using".
    static func words(_ name: String) -> String {
        var result = ""
        for character in name {
            if result.isEmpty {
                result += character.uppercased()
            } else {
                if character.isUppercase { result += " " }
                result.append(character)
            }
        }
        return result
    }
}
