/// The JSON form `{"type": ..., "data": {...}}` of SPEC §1. Decoding checks the vocabulary and
/// the bounds and throws `EventValidationError` (or `DecodingError` for a mistyped field, which
/// `EventValidationError.init(_:)` translates); it never traps on client input.
extension LocationEvent: Codable {
    enum CodingKeys: String, CodingKey {
        case type, data
    }

    private enum DataKeys: String, CodingKey {
        case request, purposeKey, choice, service, state, backgroundIndicator
        case authorization, preciseLocation, enabled, restricted, status, accuracy
        case session, action, requirement, fullAccuracyPurposeKey, active, source, flags
        case foregroundService, permissions, granted, denied, rationale, interrupted, locationEnabled, reason
        case cause
    }

    /// Keys inside `data` are bounded so that one event cannot bloat the log (bytes).
    static let maxStringLength = 128
    static let maxListCount = 64

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let typeName = try container.decode(String.self, forKey: .type)
        guard let type = EventType(rawValue: typeName) else {
            throw EventValidationError(
                .unknownType, field: "type",
                message: "type: unknown event type \(typeName.prefix(64)); expected one of "
                    + EventType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        if type == .contextReported {
            self = .contextReported(try container.decodeIfPresent(DeviceContext.self, forKey: .data) ?? DeviceContext())
        } else {
            guard container.contains(.data) else {
                throw EventValidationError(.missingField, field: "data", message: "data is required for \(typeName)")
            }
            let data = try container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
            self = try Self.decode(type, data)
        }
    }

    private static func decode(_ type: EventType, _ data: KeyedDecodingContainer<DataKeys>) throws -> LocationEvent {
        switch type {
        case .contextReported:
            return .contextReported(DeviceContext())
        case .authorizationRequested:
            let kind = try Self.decodeEnum(RequestKind.self, data, .request)
            let purposeKey = try data.decodeIfPresent(String.self, forKey: .purposeKey)
            if let purposeKey {
                try ClientText.checkKey(purposeKey, field: "data.purposeKey")
            }
            if kind == .temporaryFullAccuracy && purposeKey == nil {
                throw EventValidationError(
                    .missingField, field: "data.purposeKey",
                    message: "data.purposeKey is required for a temporaryFullAccuracy request")
            }
            return .authorizationRequested(AuthorizationRequest(kind, purposeKey: kind == .temporaryFullAccuracy ? purposeKey : nil))
        case .promptResponded:
            return .promptResponded(try Self.decodeEnum(PromptChoice.self, data, .choice))
        case .alwaysEventOccurred:
            return .alwaysEventOccurred(try Self.decodeEnum(AlwaysService.self, data, .service))
        case .appStateChanged:
            let state = try Self.decodeEnum(AppState.self, data, .state)
            let indicator = try data.decodeIfPresent(Bool.self, forKey: .backgroundIndicator) ?? false
            let service = try data.decodeIfPresent(Bool.self, forKey: .foregroundService)
            return .appStateChanged(state, backgroundIndicator: indicator, foregroundService: service)
        case .settingsChanged:
            let authorization = try Self.decodeEnumIfPresent(SettingsAuthorization.self, data, .authorization)
            let precise = try data.decodeIfPresent(Bool.self, forKey: .preciseLocation)
            if authorization == nil && precise == nil {
                throw EventValidationError(
                    .missingField, field: "data",
                    message: "settingsChanged needs data.authorization, data.preciseLocation or both (T1)")
            }
            return .settingsChanged(authorization: authorization, preciseLocation: precise)
        case .locationServicesChanged:
            return .locationServicesChanged(enabled: try data.decode(Bool.self, forKey: .enabled))
        case .restrictionChanged:
            return .restrictionChanged(restricted: try data.decode(Bool.self, forKey: .restricted))
        case .statusObserved:
            let name = try data.decode(String.self, forKey: .status)
            guard let status = AuthorizationStatus(deviceName: name) else {
                throw EventValidationError.invalid(
                    "data.status",
                    "unknown CLAuthorizationStatus \(name.prefix(64)); expected one of "
                        + AuthorizationStatus.allCases.map(\.rawValue).joined(separator: ", ") + " or authorized")
            }
            let accuracy = try Self.decodeEnumIfPresent(Accuracy.self, data, .accuracy)
            return .statusObserved(status, accuracy: accuracy)
        case .serviceSessionChanged:
            let session = try data.decode(String.self, forKey: .session)
            try ClientText.checkKey(session, field: "data.session", bytes: Self.sessionKeyBytes)
            let action = try Self.decodeEnum(ServiceSessionChange.Action.self, data, .action)
            guard action == .started else {
                // Nothing is stored altered: fields that only `started` has are refused, not dropped.
                for key in [DataKeys.requirement, .fullAccuracyPurposeKey] where data.contains(key) {
                    throw EventValidationError.invalid("data.\(key.stringValue)", "only an action of started has it")
                }
                return .serviceSessionChanged(.invalidated(session))
            }
            guard let requirement = try Self.decodeEnumIfPresent(SessionRequirement.self, data, .requirement) else {
                throw EventValidationError.invalid("data.requirement", "required when action is started: none, whenInUse or always")
            }
            let purposeKey = try data.decodeIfPresent(String.self, forKey: .fullAccuracyPurposeKey)
            if let purposeKey {
                try ClientText.checkKey(purposeKey, field: "data.fullAccuracyPurposeKey")
            }
            return .serviceSessionChanged(.started(session, requirement, fullAccuracyPurposeKey: purposeKey))
        case .backgroundActivityChanged:
            return .backgroundActivityChanged(active: try data.decode(Bool.self, forKey: .active))
        case .diagnosticObserved:
            return .diagnosticObserved(try Self.decodeDiagnostic(data))
        case .permissionsRequested:
            let permissions = try Self.decodePermissions(data, .permissions, allowed: AndroidPermission.requestable)
            if permissions.isEmpty {
                throw EventValidationError.invalid("data.permissions", "name at least one of coarse, fine, background")
            }
            return .permissionsRequested(permissions)
        case .permissionsResult:
            let granted = try Self.decodePermissions(data, .granted, allowed: AndroidPermission.requestable)
            let denied = try Self.decodePermissions(data, .denied, allowed: AndroidPermission.requestable)
            if let both = granted.intersection(denied).sorted().first {
                throw EventValidationError.invalid("data.denied", "\(both.rawValue) is both granted and denied")
            }
            let rationale = data.contains(.rationale)
                ? try Self.decodePermissions(data, .rationale, allowed: AndroidPermission.requestable) : nil
            let interrupted = try data.decode(Bool.self, forKey: .interrupted)
            return .permissionsResult(PermissionsResult(granted: granted, denied: denied, rationale: rationale, interrupted: interrupted))
        case .permissionsObserved:
            let granted = try Self.decodePermissions(data, .granted, allowed: AndroidPermission.requestable)
            return .permissionsObserved(granted: granted, locationEnabled: try data.decodeIfPresent(Bool.self, forKey: .locationEnabled))
        case .permissionsReset:
            return .permissionsReset(try Self.decodeEnum(PermissionsResetReason.self, data, .reason))
        case .locationButtonSession:
            let state = try Self.decodeEnum(LocationButtonSessionState.self, data, .state)
            let cause = try data.decodeIfPresent(String.self, forKey: .cause)
            if let cause {
                // Nothing is stored altered: a cause where there was no error is refused, not dropped.
                guard state == .failed else {
                    throw EventValidationError.invalid("data.cause", "only a state of failed has it")
                }
                try ClientText.checkClassName(cause, field: "data.cause", bytes: LocationButton.causeBytes)
            }
            return .locationButtonSession(state, cause: cause)
        case .locationButtonResult:
            return .locationButtonResult(granted: try data.decode(Bool.self, forKey: .granted))
        }
    }

    /// A set of Android permissions sent as an array of names: each known and allowed here, none
    /// twice (nothing is stored altered).
    private static func decodePermissions(
        _ data: KeyedDecodingContainer<DataKeys>, _ key: DataKeys, allowed: Set<AndroidPermission>
    ) throws -> Set<AndroidPermission> {
        let names = try data.decode([String].self, forKey: key)
        var permissions = Set<AndroidPermission>()
        for name in names {
            guard let permission = AndroidPermission(rawValue: name), allowed.contains(permission) else {
                throw EventValidationError.invalid(
                    "data.\(key.stringValue)", "\(name.prefix(64)) is not one of " + allowed.sorted().map(\.rawValue).joined(separator: ", "))
            }
            guard permissions.insert(permission).inserted else {
                throw EventValidationError.invalid("data.\(key.stringValue)", "\(name) is listed twice")
            }
        }
        return permissions
    }

    /// SPEC §11: a session key is 1 to 64 bytes of `[A-Za-z0-9._-]`.
    static let sessionKeyBytes = 1...64

    /// `diagnosticObserved.data`: each source may carry only its own flags, a flag at most once,
    /// and only `serviceSession` names a session (which it must).
    private static func decodeDiagnostic(_ data: KeyedDecodingContainer<DataKeys>) throws -> Diagnostic {
        let source = try Self.decodeEnum(DiagnosticSource.self, data, .source)
        let session = try data.decodeIfPresent(String.self, forKey: .session)
        switch (source, session) {
        case (.serviceSession, nil):
            throw EventValidationError.invalid("data.session", "required with source serviceSession")
        case (.serviceSession, let session?):
            try ClientText.checkKey(session, field: "data.session", bytes: Self.sessionKeyBytes)
        case (_, _?):
            throw EventValidationError.invalid("data.session", "only a serviceSession diagnostic names a session")
        case (_, nil):
            break
        }
        let names = try data.decode([String].self, forKey: .flags)
        var flags = Set<DiagnosticFlag>()
        for name in names {
            guard let flag = DiagnosticFlag(rawValue: name) else {
                throw EventValidationError.invalid(
                    "data.flags", "unknown flag \(name.prefix(64)); expected names among "
                        + DiagnosticFlag.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard source.allowedFlags.contains(flag) else {
                throw EventValidationError.invalid(
                    "data.flags", "a \(source.rawValue) diagnostic has no \(name) (it has "
                        + source.allowedFlags.sorted().map(\.rawValue).joined(separator: ", ") + ")")
            }
            guard flags.insert(flag).inserted else {
                throw EventValidationError.invalid("data.flags", "\(name) is listed twice")
            }
        }
        return Diagnostic(source: source, session: session, flags: flags)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        if case .contextReported(let context) = self {
            try container.encode(context, forKey: .data)
            return
        }
        var data = container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        switch self {
        case .contextReported:
            break
        case .authorizationRequested(let request):
            try data.encode(request.kind, forKey: .request)
            try data.encodeIfPresent(request.purposeKey, forKey: .purposeKey)
        case .promptResponded(let choice):
            try data.encode(choice, forKey: .choice)
        case .alwaysEventOccurred(let service):
            try data.encode(service, forKey: .service)
        case .appStateChanged(let state, let indicator, let service):
            try data.encode(state, forKey: .state)
            if let service {
                try data.encode(service, forKey: .foregroundService)
            } else {
                try data.encode(indicator, forKey: .backgroundIndicator)
            }
        case .settingsChanged(let authorization, let precise):
            try data.encodeIfPresent(authorization, forKey: .authorization)
            try data.encodeIfPresent(precise, forKey: .preciseLocation)
        case .locationServicesChanged(let enabled):
            try data.encode(enabled, forKey: .enabled)
        case .restrictionChanged(let restricted):
            try data.encode(restricted, forKey: .restricted)
        case .statusObserved(let status, let accuracy):
            try data.encode(status, forKey: .status)
            try data.encodeIfPresent(accuracy, forKey: .accuracy)
        case .serviceSessionChanged(let change):
            try data.encode(change.session, forKey: .session)
            try data.encode(change.action, forKey: .action)
            try data.encodeIfPresent(change.requirement, forKey: .requirement)
            try data.encodeIfPresent(change.fullAccuracyPurposeKey, forKey: .fullAccuracyPurposeKey)
        case .backgroundActivityChanged(let active):
            try data.encode(active, forKey: .active)
        case .diagnosticObserved(let diagnostic):
            try data.encode(diagnostic.source, forKey: .source)
            try data.encodeIfPresent(diagnostic.session, forKey: .session)
            try data.encode(diagnostic.flags.sorted(), forKey: .flags)
        case .permissionsRequested(let permissions):
            try data.encode(permissions.sorted(), forKey: .permissions)
        case .permissionsResult(let result):
            try data.encode(result.granted.sorted(), forKey: .granted)
            try data.encode(result.denied.sorted(), forKey: .denied)
            try data.encodeIfPresent(result.rationale?.sorted(), forKey: .rationale)
            try data.encode(result.interrupted, forKey: .interrupted)
        case .permissionsObserved(let granted, let locationEnabled):
            try data.encode(granted.sorted(), forKey: .granted)
            try data.encodeIfPresent(locationEnabled, forKey: .locationEnabled)
        case .permissionsReset(let reason):
            try data.encode(reason, forKey: .reason)
        case .locationButtonSession(let state, let cause):
            try data.encode(state, forKey: .state)
            try data.encodeIfPresent(cause, forKey: .cause)
        case .locationButtonResult(let granted):
            try data.encode(granted, forKey: .granted)
        }
    }

    private static func decodeEnum<Value: RawRepresentable & CaseIterable, Key: CodingKey>(
        _ type: Value.Type, _ container: KeyedDecodingContainer<Key>, _ key: Key
    ) throws -> Value where Value.RawValue == String {
        guard let value = try decodeEnumIfPresent(type, container, key) else {
            throw EventValidationError(.missingField, field: "data.\(key.stringValue)", message: "data.\(key.stringValue) is required")
        }
        return value
    }

    private static func decodeEnumIfPresent<Value: RawRepresentable & CaseIterable, Key: CodingKey>(
        _ type: Value.Type, _ container: KeyedDecodingContainer<Key>, _ key: Key
    ) throws -> Value? where Value.RawValue == String {
        guard let raw = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let value = Value(rawValue: raw) else {
            throw EventValidationError.invalid(
                "data.\(key.stringValue)",
                "\(raw.prefix(64)) is not one of " + Value.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return value
    }

    /// SPEC §1: `appVersion` is 1 to 64 bytes.
    static let maxAppVersionBytes = 64
}

extension DeviceContext: Codable {
    private enum CodingKeys: String, CodingKey {
        case platform, osVersion, appVersion, usageDescriptions, temporaryUsagePurposeKeys, defaultAccuracyReduced
        case requireExplicitServiceSession, backgroundLocationMode, apiLevel, targetSdk, declaredPermissions
        case fineOnlyForLocationButton
        case installID = "installId"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        if let raw = try container.decodeIfPresent(String.self, forKey: .platform) {
            guard let platform = Platform(rawValue: raw) else {
                throw EventValidationError.invalid(
                    "data.platform", "\(raw.prefix(64)) is not one of " + Platform.allCases.map(\.rawValue).joined(separator: ", "))
            }
            self.platform = platform
        }
        if let raw = try container.decodeIfPresent(String.self, forKey: .osVersion) {
            guard let version = OSVersion(raw) else {
                throw EventValidationError.invalid("data.osVersion", "\(raw.prefix(64)) is not a version such as 17.4")
            }
            self.osVersion = version
        }
        if let appVersion = try container.decodeIfPresent(String.self, forKey: .appVersion) {
            try ClientText.check(appVersion, field: "data.appVersion", bytes: 1...LocationEvent.maxAppVersionBytes)
            self.appVersion = appVersion
        }
        if let installID = try container.decodeIfPresent(String.self, forKey: .installID) {
            // I1: bounded as `appVersion`.
            try ClientText.check(installID, field: "data.installId", bytes: 1...LocationEvent.maxAppVersionBytes)
            self.installID = installID
        }
        self.usageDescriptions = try Self.decodeKeys(container, .usageDescriptions)
        self.temporaryUsagePurposeKeys = try Self.decodeKeys(container, .temporaryUsagePurposeKeys)
        self.defaultAccuracyReduced = try container.decodeIfPresent(Bool.self, forKey: .defaultAccuracyReduced)
        self.requireExplicitServiceSession = try container.decodeIfPresent(Bool.self, forKey: .requireExplicitServiceSession)
        self.backgroundLocationMode = try container.decodeIfPresent(Bool.self, forKey: .backgroundLocationMode)
        // Android (SPEC §12): 1..99; on another platform these fields do not exist.
        for key in [CodingKeys.apiLevel, .targetSdk] {
            let decoded: Int?
            do {
                decoded = try container.decodeIfPresent(Int.self, forKey: key)
            } catch let error as DecodingError {
                throw error
            } catch {
                // A number that is no integer (`30.5`): Foundation's decoder would call the whole
                // body not JSON; SPEC §14 makes it a 422 naming the field.
                throw EventValidationError.invalid("data.\(key.stringValue)", "must be an integer: an API level from 1 to 99")
            }
            guard let level = decoded else { continue }
            guard (1...99).contains(level) else {
                throw EventValidationError.invalid("data.\(key.stringValue)", "\(level) is not an API level from 1 to 99")
            }
            if key == .apiLevel { apiLevel = level } else { targetSdk = level }
        }
        if let names = try container.decodeIfPresent([String].self, forKey: .declaredPermissions) {
            var permissions = Set<AndroidPermission>()
            for name in names {
                guard let permission = AndroidPermission(rawValue: name) else {
                    throw EventValidationError.invalid(
                        "data.declaredPermissions", "\(name.prefix(64)) is not one of " + AndroidPermission.allCases.map(\.rawValue).joined(separator: ", "))
                }
                guard permissions.insert(permission).inserted else {
                    throw EventValidationError.invalid("data.declaredPermissions", "\(name) is listed twice")
                }
            }
            declaredPermissions = permissions
        }
        fineOnlyForLocationButton = try container.decodeIfPresent(Bool.self, forKey: .fineOnlyForLocationButton)
        if let platform, platform != .android {
            for (key, present) in [("apiLevel", apiLevel != nil), ("targetSdk", targetSdk != nil), ("declaredPermissions", declaredPermissions != nil),
                                   ("fineOnlyForLocationButton", fineOnlyForLocationButton != nil)] where present {
                throw EventValidationError.invalid("data.\(key)", "only an Android context has it")
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(platform, forKey: .platform)
        try container.encodeIfPresent(osVersion?.description, forKey: .osVersion)
        try container.encodeIfPresent(appVersion, forKey: .appVersion)
        // Sets are written sorted so that the same context always encodes to the same bytes.
        try container.encodeIfPresent(usageDescriptions?.sorted(), forKey: .usageDescriptions)
        try container.encodeIfPresent(temporaryUsagePurposeKeys?.sorted(), forKey: .temporaryUsagePurposeKeys)
        try container.encodeIfPresent(defaultAccuracyReduced, forKey: .defaultAccuracyReduced)
        try container.encodeIfPresent(requireExplicitServiceSession, forKey: .requireExplicitServiceSession)
        try container.encodeIfPresent(backgroundLocationMode, forKey: .backgroundLocationMode)
        try container.encodeIfPresent(apiLevel, forKey: .apiLevel)
        try container.encodeIfPresent(targetSdk, forKey: .targetSdk)
        try container.encodeIfPresent(declaredPermissions?.sorted(), forKey: .declaredPermissions)
        try container.encodeIfPresent(fineOnlyForLocationButton, forKey: .fineOnlyForLocationButton)
        try container.encodeIfPresent(installID, forKey: .installID)
    }

    private static func decodeKeys(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Set<String>? {
        guard let keys = try container.decodeIfPresent([String].self, forKey: key) else { return nil }
        guard keys.count <= LocationEvent.maxListCount else {
            throw EventValidationError.invalid("data.\(key.stringValue)", "at most \(LocationEvent.maxListCount) keys")
        }
        for (position, item) in keys.enumerated() {
            try ClientText.checkKey(item, field: "data.\(key.stringValue)[\(position)]", bytes: 1...LocationEvent.maxStringLength)
        }
        return Set(keys)
    }
}
