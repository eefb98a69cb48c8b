import Foundation
import LocationGateJSON

/// The JSON forms the service writes on every append and reads back on every replay and state
/// load, written and read by hand (`JSONWriter`, `JSONNode`) because Foundation's coders were
/// most of the cost of both. They are the same forms as the `Codable` conformances: the tests
/// decode what these write with `JSONDecoder`, and read what `JSONEncoder` writes.
///
/// The readers are for stored JSON that this code wrote. They return nil on anything else, and
/// callers then fall back to `Codable`, which reports what is wrong.

extension LocationEvent {
    /// The `data` object, as the log stores it (the type has a column of its own).
    public var dataJSON: String {
        var writer = JSONWriter(capacity: 64)
        writeData(to: &writer)
        return writer.text
    }

    public func writeData(to writer: inout JSONWriter) {
        if case .contextReported(let context) = self {
            context.write(to: &writer)
            return
        }
        writer.objectStart()
        switch self {
        case .contextReported:
            break
        case .authorizationRequested(let request):
            writer.field("request", request.kind)
            writer.fieldIfPresent("purposeKey", request.purposeKey)
        case .promptResponded(let choice):
            writer.field("choice", choice)
        case .alwaysEventOccurred(let service):
            writer.field("service", service)
        case .appStateChanged(let state, let indicator, let service):
            writer.field("state", state)
            if let service {
                writer.field("foregroundService", service)
            } else {
                writer.field("backgroundIndicator", indicator)
            }
        case .settingsChanged(let authorization, let precise):
            writer.fieldIfPresent("authorization", authorization)
            writer.fieldIfPresent("preciseLocation", precise)
        case .locationServicesChanged(let enabled):
            writer.field("enabled", enabled)
        case .restrictionChanged(let restricted):
            writer.field("restricted", restricted)
        case .statusObserved(let status, let accuracy):
            writer.field("status", status)
            writer.fieldIfPresent("accuracy", accuracy)
        case .serviceSessionChanged(let change):
            writer.field("session", change.session)
            writer.field("action", change.action)
            writer.fieldIfPresent("requirement", change.requirement)
            writer.fieldIfPresent("fullAccuracyPurposeKey", change.fullAccuracyPurposeKey)
        case .backgroundActivityChanged(let active):
            writer.field("active", active)
        case .diagnosticObserved(let diagnostic):
            writer.field("source", diagnostic.source)
            writer.fieldIfPresent("session", diagnostic.session)
            writer.field("flags", strings: diagnostic.flags.sorted().map(\.rawValue))
        case .permissionsRequested(let permissions):
            writer.field("permissions", strings: permissions.sorted().map(\.rawValue))
        case .permissionsResult(let result):
            writer.field("granted", strings: result.granted.sorted().map(\.rawValue))
            writer.field("denied", strings: result.denied.sorted().map(\.rawValue))
            if let rationale = result.rationale { writer.field("rationale", strings: rationale.sorted().map(\.rawValue)) }
            writer.field("interrupted", result.interrupted)
        case .permissionsObserved(let granted, let locationEnabled):
            writer.field("granted", strings: granted.sorted().map(\.rawValue))
            writer.fieldIfPresent("locationEnabled", locationEnabled)
        case .permissionsReset(let reason):
            writer.field("reason", reason)
        case .locationButtonSession(let state, let cause):
            writer.field("state", state)
            writer.fieldIfPresent("cause", cause)
        case .locationButtonResult(let granted):
            writer.field("granted", granted)
        }
        writer.objectEnd()
    }

    /// An event read back from the log's `type` and `data` columns; nil when they are not a
    /// form this code writes.
    public init?(storedType: String, data: String) {
        guard let type = EventType(rawValue: storedType), let node = JSONNode.parse(data) else { return nil }
        self.init(type: type, data: node)
    }

    /// An event from its type and its parsed `data` object; nil when `data` is not a form this
    /// code writes. It checks the vocabulary, not the bounds on free text (`purposeKey`, the
    /// context's strings), which `Codable` checks.
    public init?(type: EventType, data: JSONNode) {
        guard case .object = data else { return nil }
        switch type {
        case .contextReported:
            guard let context = DeviceContext(node: data) else { return nil }
            self = .contextReported(context)
        case .authorizationRequested:
            guard let kind = data.value("request", as: RequestKind.self) else { return nil }
            guard let purposeKey = data.optional("purposeKey", \.string) else { return nil }
            if kind == .temporaryFullAccuracy {
                guard let purposeKey else { return nil }
                self = .authorizationRequested(.temporaryFullAccuracy(purposeKey))
            } else {
                self = .authorizationRequested(AuthorizationRequest(kind))
            }
        case .promptResponded:
            guard let choice = data.value("choice", as: PromptChoice.self) else { return nil }
            self = .promptResponded(choice)
        case .alwaysEventOccurred:
            guard let service = data.value("service", as: AlwaysService.self) else { return nil }
            self = .alwaysEventOccurred(service)
        case .appStateChanged:
            guard let state = data.value("state", as: AppState.self) else { return nil }
            guard let indicator = data.optional("backgroundIndicator", \.bool),
                  let service = data.optional("foregroundService", \.bool) else { return nil }
            self = .appStateChanged(state, backgroundIndicator: indicator ?? false, foregroundService: service)
        case .settingsChanged:
            guard let authorization = data.optional("authorization", as: SettingsAuthorization.self),
                  let precise = data.optional("preciseLocation", \.bool) else { return nil }
            guard authorization != nil || precise != nil else { return nil }
            self = .settingsChanged(authorization: authorization, preciseLocation: precise)
        case .locationServicesChanged:
            guard let enabled = data["enabled"]?.bool else { return nil }
            self = .locationServicesChanged(enabled: enabled)
        case .restrictionChanged:
            guard let restricted = data["restricted"]?.bool else { return nil }
            self = .restrictionChanged(restricted: restricted)
        case .statusObserved:
            guard let status = data["status"]?.string.flatMap(AuthorizationStatus.init(deviceName:)) else { return nil }
            guard let accuracy = data.optional("accuracy", as: Accuracy.self) else { return nil }
            self = .statusObserved(status, accuracy: accuracy)
        case .serviceSessionChanged:
            guard let session = data["session"]?.string, let action = data.value("action", as: ServiceSessionChange.Action.self),
                  let requirement = data.optional("requirement", as: SessionRequirement.self),
                  let purposeKey = data.optional("fullAccuracyPurposeKey", \.string)
            else { return nil }
            if action == .started {
                guard let requirement else { return nil }
                self = .serviceSessionChanged(.started(session, requirement, fullAccuracyPurposeKey: purposeKey))
            } else {
                self = .serviceSessionChanged(.invalidated(session))
            }
        case .backgroundActivityChanged:
            guard let active = data["active"]?.bool else { return nil }
            self = .backgroundActivityChanged(active: active)
        case .diagnosticObserved:
            guard let source = data.value("source", as: DiagnosticSource.self), let session = data.optional("session", \.string),
                  let items = data["flags"]?.array
            else { return nil }
            var flags = Set<DiagnosticFlag>()
            for item in items {
                guard let flag = item.string.flatMap(DiagnosticFlag.init(rawValue:)) else { return nil }
                flags.insert(flag)
            }
            self = .diagnosticObserved(Diagnostic(source: source, session: session, flags: flags))
        case .permissionsRequested:
            guard let permissions = data["permissions"].flatMap(Self.permissions), !permissions.isEmpty else { return nil }
            self = .permissionsRequested(permissions)
        case .permissionsResult:
            guard let granted = data["granted"].flatMap(Self.permissions), let denied = data["denied"].flatMap(Self.permissions),
                  let rationale = data.optional("rationale", Self.permissions), let interrupted = data["interrupted"]?.bool
            else { return nil }
            self = .permissionsResult(PermissionsResult(granted: granted, denied: denied, rationale: rationale, interrupted: interrupted))
        case .permissionsObserved:
            guard let granted = data["granted"].flatMap(Self.permissions), let enabled = data.optional("locationEnabled", \.bool)
            else { return nil }
            self = .permissionsObserved(granted: granted, locationEnabled: enabled)
        case .permissionsReset:
            guard let reason = data.value("reason", as: PermissionsResetReason.self) else { return nil }
            self = .permissionsReset(reason)
        case .locationButtonSession:
            guard let state = data.value("state", as: LocationButtonSessionState.self), let cause = data.optional("cause", \.string)
            else { return nil }
            // Only `failed` carries a cause (the Codable form refuses it elsewhere).
            guard cause == nil || state == .failed else { return nil }
            self = .locationButtonSession(state, cause: cause)
        case .locationButtonResult:
            guard let granted = data["granted"]?.bool else { return nil }
            self = .locationButtonResult(granted: granted)
        }
    }

    static func permissions(_ node: JSONNode) -> Set<AndroidPermission>? {
        guard let items = node.array else { return nil }
        var permissions = Set<AndroidPermission>()
        for item in items {
            guard let permission = item.string.flatMap(AndroidPermission.init(rawValue:)) else { return nil }
            permissions.insert(permission)
        }
        return permissions
    }
}

extension DeviceContext {
    public func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.fieldIfPresent("platform", platform)
        writer.fieldIfPresent("osVersion", osVersion?.description)
        writer.fieldIfPresent("appVersion", appVersion)
        // Sorted, as the Codable form, so that the same context always writes the same bytes.
        if let usageDescriptions { writer.field("usageDescriptions", strings: usageDescriptions.sorted()) }
        if let temporaryUsagePurposeKeys { writer.field("temporaryUsagePurposeKeys", strings: temporaryUsagePurposeKeys.sorted()) }
        writer.fieldIfPresent("defaultAccuracyReduced", defaultAccuracyReduced)
        writer.fieldIfPresent("requireExplicitServiceSession", requireExplicitServiceSession)
        writer.fieldIfPresent("backgroundLocationMode", backgroundLocationMode)
        writer.fieldIfPresent("apiLevel", apiLevel)
        writer.fieldIfPresent("targetSdk", targetSdk)
        if let declaredPermissions { writer.field("declaredPermissions", strings: declaredPermissions.sorted().map(\.rawValue)) }
        writer.fieldIfPresent("fineOnlyForLocationButton", fineOnlyForLocationButton)
        writer.fieldIfPresent("installId", installID)
        writer.objectEnd()
    }

    init?(node: JSONNode) {
        guard case .object = node else { return nil }
        guard let platform = node.optional("platform", as: Platform.self),
              let osVersion = node.optional("osVersion", { $0.string.flatMap(OSVersion.init) }),
              let appVersion = node.optional("appVersion", \.string),
              let usageDescriptions = node.optional("usageDescriptions", Self.keys),
              let temporaryUsagePurposeKeys = node.optional("temporaryUsagePurposeKeys", Self.keys),
              let defaultAccuracyReduced = node.optional("defaultAccuracyReduced", \.bool),
              let requireExplicitServiceSession = node.optional("requireExplicitServiceSession", \.bool),
              let backgroundLocationMode = node.optional("backgroundLocationMode", \.bool),
              let apiLevel = node.optional("apiLevel", \.int), let targetSdk = node.optional("targetSdk", \.int),
              let declaredPermissions = node.optional("declaredPermissions", LocationEvent.permissions),
              let installID = node.optional("installId", \.string),
              let fineOnlyForLocationButton = node.optional("fineOnlyForLocationButton", \.bool)
        else { return nil }
        self.init(
            platform: platform, osVersion: osVersion, appVersion: appVersion, usageDescriptions: usageDescriptions,
            temporaryUsagePurposeKeys: temporaryUsagePurposeKeys, defaultAccuracyReduced: defaultAccuracyReduced,
            requireExplicitServiceSession: requireExplicitServiceSession, backgroundLocationMode: backgroundLocationMode,
            apiLevel: apiLevel, targetSdk: targetSdk, declaredPermissions: declaredPermissions, installID: installID,
            fineOnlyForLocationButton: fineOnlyForLocationButton)
    }

    private static func keys(_ node: JSONNode) -> Set<String>? {
        guard let items = node.array else { return nil }
        var keys = Set<String>(minimumCapacity: items.count)
        for item in items {
            guard let key = item.string else { return nil }
            keys.insert(key)
        }
        return keys
    }
}

extension DeviceState {
    /// The stored form (`device_states.state`), the `Codable` form with the derived status.
    public var storedJSON: String {
        var writer = JSONWriter(capacity: 320)
        write(to: &writer)
        return writer.text
    }

    public func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.field("authorization", authorization)
        writer.field("provisional", provisional)
        writer.field("temporary", temporary)
        writer.field("alwaysPromptUsed", alwaysPromptUsed)
        writer.field("pendingPrompt", pendingPrompt?.rawValue ?? "none")
        writer.field("accuracy", accuracy)
        writer.field("temporaryFullAccuracy", temporaryFullAccuracy)
        writer.field("locationServicesEnabled", locationServicesEnabled)
        writer.field("restricted", restricted)
        writer.field("inUse", inUse)
        writer.field("inferredAllowWhileUsing", inferredAllowWhileUsing)
        writer.field("inForeground", inForeground)
        writer.key("context")
        context.write(to: &writer)
        // Not `installID`: the stored form is what the maintained counts group devices by, and
        // an id of its own would make every device a kind of its own. The projection keeps it
        // in a column beside the state (`device_states.install_id`).
        sessionState.write(to: &writer)
        if context.family == .android { android.write(to: &writer) }
        writer.field("status", status)
        writer.objectEnd()
    }

    /// A state read back from `device_states.state`; nil when it is not the stored form.
    public init?(storedJSON text: String) {
        guard let node = JSONNode.parse(text) else { return nil }
        self.init(node: node)
    }

    public init?(node: JSONNode) {
        guard let authorization = node.value("authorization", as: Authorization.self),
              let provisional = node["provisional"]?.bool, let temporary = node["temporary"]?.bool,
              let alwaysPromptUsed = node["alwaysPromptUsed"]?.bool, let prompt = node["pendingPrompt"]?.string,
              let accuracy = node.value("accuracy", as: Accuracy.self),
              let temporaryFullAccuracy = node["temporaryFullAccuracy"]?.bool,
              let locationServicesEnabled = node["locationServicesEnabled"]?.bool,
              let restricted = node["restricted"]?.bool, let inUse = node["inUse"]?.bool
        else { return nil }
        self.init()
        // Absent in states stored before O2.
        self.inferredAllowWhileUsing = node["inferredAllowWhileUsing"]?.bool ?? false
        self.authorization = authorization
        self.provisional = provisional
        self.temporary = temporary
        self.alwaysPromptUsed = alwaysPromptUsed
        if prompt != "none" {
            guard let pending = Prompt(rawValue: prompt) else { return nil }
            pendingPrompt = pending
        }
        self.accuracy = accuracy
        self.temporaryFullAccuracy = temporaryFullAccuracy
        self.locationServicesEnabled = locationServicesEnabled
        self.restricted = restricted
        self.inUse = inUse
        // Absent in states stored before sessions (SPEC §11): the defaults.
        self.inForeground = node["inForeground"]?.bool ?? true
        if let context = node["context"], !context.isNull {
            guard let decoded = DeviceContext(node: context) else { return nil }
            self.context = decoded
        }
        guard let sessionState = ServiceSessionState(stateNode: node) else { return nil }
        self.sessionState = sessionState
        guard let android = AndroidPermissionState(stateNode: node) else { return nil }
        self.android = android
    }
}

extension AndroidPermissionState {
    /// The members of an Android device's state object (SPEC §12): `foreground`, `background`,
    /// `denials` and `blocked` per group, then what D2-D6 keep to read results.
    public func write(to writer: inout JSONWriter) {
        writer.field("foreground", foreground)
        writer.field("background", background)
        writer.key("denials")
        writer.objectStart()
        writer.field("foreground", foregroundDenials)
        writer.field("background", backgroundDenials)
        writer.field("precise", preciseDenials)
        writer.objectEnd()
        writer.key("blocked")
        writer.objectStart()
        writer.field("foreground", foregroundBlocked)
        writer.field("background", backgroundBlocked)
        writer.field("precise", preciseBlocked)
        writer.objectEnd()
        writer.field("pendingRequest", strings: pendingRequest.sorted().map(\.rawValue))
        writer.key("correctableAnswer")
        if let correctableAnswer { writer.string(correctableAnswer.rawValue) } else { writer.null() }
        writer.field("leftForegroundSinceAnswer", leftForegroundSinceAnswer)
        // The location button (B1-B7): SPEC §12's two members, then the rules' memory.
        writer.field("buttonConsents", buttonConsents)
        writer.field("locationButtonSession", locationButtonSession)
        writer.field("buttonGrant", buttonGrant)
        writer.field("approximateUnderButton", approximateUnderButton)
        writer.field("neverInSettings", neverInSettings)
    }

    /// Reads what `write` writes; every member may be absent (an Apple device's state).
    init?(stateNode node: JSONNode) {
        self.init()
        guard node["foreground"] != nil else { return }
        guard let foreground = node.value("foreground", as: ForegroundGrant.self), let background = node["background"]?.bool,
              let denials = node["denials"], let blocked = node["blocked"],
              let foregroundDenials = denials["foreground"]?.int, let backgroundDenials = denials["background"]?.int,
              let foregroundBlocked = blocked["foreground"]?.bool, let backgroundBlocked = blocked["background"]?.bool,
              let pending = node["pendingRequest"].flatMap(LocationEvent.permissions),
              let answer = node.optional("correctableAnswer", as: PromptChoice.self),
              let left = node["leftForegroundSinceAnswer"]?.bool
        else { return nil }
        self.foreground = foreground
        self.background = background
        self.foregroundDenials = foregroundDenials
        self.backgroundDenials = backgroundDenials
        self.foregroundBlocked = foregroundBlocked
        self.backgroundBlocked = backgroundBlocked
        // D11's members are absent in states stored before them: no precise denial.
        self.preciseDenials = denials["precise"]?.int ?? 0
        self.preciseBlocked = blocked["precise"]?.bool ?? false
        self.pendingRequest = pending
        self.correctableAnswer = answer
        self.leftForegroundSinceAnswer = left
        // The location button's members are absent in states stored before it: their starts.
        guard let consents = node.optional("buttonConsents", \.int), let session = node.optional("locationButtonSession", \.bool),
              let grant = node.optional("buttonGrant", \.bool), let kept = node.optional("approximateUnderButton", \.bool),
              let never = node.optional("neverInSettings", \.bool)
        else { return nil }
        self.buttonConsents = consents ?? 0
        self.locationButtonSession = session ?? false
        self.buttonGrant = grant ?? false
        self.approximateUnderButton = kept ?? false
        self.neverInSettings = never ?? false
    }
}

extension ServiceSessionState {
    /// The members of the device state object (SPEC §11): `sessions` keyed by session key,
    /// sorted so that the same state always writes the same bytes, then the flags.
    public func write(to writer: inout JSONWriter) {
        writer.key("sessions")
        writer.objectStart()
        for key in sessions.keys.sorted() {
            guard let session = sessions[key] else { continue }
            writer.key(key)
            writer.objectStart()
            writer.field("requirement", session.requirement)
            writer.key("fullAccuracyPurposeKey")
            if let purposeKey = session.fullAccuracyPurposeKey { writer.string(purposeKey) } else { writer.null() }
            writer.field("active", session.active)
            writer.field("resumable", session.resumable)
            writer.field("fullAccuracyDeclined", session.fullAccuracyDeclined)
            writer.objectEnd()
        }
        writer.objectEnd()
        writer.field("backgroundActivity", backgroundActivity)
        writer.field("backgroundActivityResumable", backgroundActivityResumable)
        writer.field("monitorLimited", monitorLimited)
        writer.field("sessionPromptFailureReported", promptFailureReported)
    }

    /// Reads the members `write` writes from the device state object; each may be absent (a
    /// state stored before sessions), nil when one is present but not this form.
    init?(stateNode node: JSONNode) {
        self.init()
        if let sessions = node["sessions"] {
            guard case .object(let members) = sessions else { return nil }
            for member in members {
                let item = member.value
                guard let requirement = item.value("requirement", as: SessionRequirement.self),
                      let purposeKey = item.optional("fullAccuracyPurposeKey", \.string),
                      let active = item["active"]?.bool, let resumable = item["resumable"]?.bool
                else { return nil }
                self.sessions[member.key] = ServiceSession(
                    requirement: requirement, fullAccuracyPurposeKey: purposeKey, active: active, resumable: resumable,
                    fullAccuracyDeclined: item["fullAccuracyDeclined"]?.bool ?? false)
            }
        }
        backgroundActivity = node["backgroundActivity"]?.bool ?? false
        backgroundActivityResumable = node["backgroundActivityResumable"]?.bool ?? false
        monitorLimited = node["monitorLimited"]?.bool ?? false
        promptFailureReported = node["sessionPromptFailureReported"]?.bool ?? false
    }
}

extension StatusSummary {
    public func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.field("accuracy", accuracy)
        writer.field("provisional", provisional)
        writer.field("status", status)
        writer.field("temporary", temporary)
        writer.objectEnd()
    }

    public init?(node: JSONNode) {
        guard let status = node.value("status", as: AuthorizationStatus.self), let provisional = node["provisional"]?.bool,
              let temporary = node["temporary"]?.bool, let accuracy = node.value("accuracy", as: Accuracy.self)
        else { return nil }
        self.init(status: status, provisional: provisional, temporary: temporary, accuracy: accuracy)
    }
}

extension Effect {
    public func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.field("kind", kind.rawValue)
        switch self {
        case .promptShown(let prompt):
            writer.field("prompt", prompt)
        case .statusChanged(let from, let to), .reconciled(let from, let to):
            writer.field("from", from)
            writer.field("to", to)
        case .accuracyChanged(let from, let to):
            writer.field("from", from)
            writer.field("to", to)
        case .noEffect(let reason):
            writer.field("reason", reason)
        case .failed(let reason, let keys):
            writer.field("reason", reason)
            writer.field("keys", strings: keys)
        case .eventDelivered(let delivered):
            writer.field("delivered", delivered)
        case .answerInferred(let prompt, let choice):
            writer.field("prompt", prompt)
            writer.field("choice", choice)
        case .answerCorrected(let prompt, let from, let to):
            writer.field("prompt", prompt)
            writer.field("from", from)
            writer.field("to", to)
        case .sessionChanged(let session, let active):
            writer.field("session", session)
            writer.field("active", active)
        case .reset(let reason):
            writer.field("reason", reason)
        }
        writer.objectEnd()
    }

    public init?(node: JSONNode) {
        guard let kind = node.value("kind", as: Kind.self) else { return nil }
        switch kind {
        case .promptShown:
            guard let prompt = node.value("prompt", as: Prompt.self) else { return nil }
            self = .promptShown(prompt)
        case .statusChanged, .reconciled:
            guard let from = node.value("from", as: AuthorizationStatus.self), let to = node.value("to", as: AuthorizationStatus.self)
            else { return nil }
            self = kind == .statusChanged ? .statusChanged(from: from, to: to) : .reconciled(from: from, to: to)
        case .accuracyChanged:
            guard let from = node.value("from", as: Accuracy.self), let to = node.value("to", as: Accuracy.self) else { return nil }
            self = .accuracyChanged(from: from, to: to)
        case .noEffect:
            guard let reason = node.value("reason", as: NoEffectReason.self) else { return nil }
            self = .noEffect(reason)
        case .failed:
            guard let reason = node.value("reason", as: FailureReason.self), let items = node["keys"]?.array else { return nil }
            var keys: [String] = []
            for item in items {
                guard let key = item.string else { return nil }
                keys.append(key)
            }
            self = .failed(reason, keys: keys)
        case .eventDelivered:
            guard let delivered = node["delivered"]?.bool else { return nil }
            self = .eventDelivered(delivered)
        case .answerInferred:
            guard let prompt = node.value("prompt", as: Prompt.self), let choice = node.value("choice", as: PromptChoice.self)
            else { return nil }
            self = .answerInferred(prompt: prompt, choice: choice)
        case .answerCorrected:
            guard let prompt = node.value("prompt", as: Prompt.self), let from = node.value("from", as: PromptChoice.self),
                  let to = node.value("to", as: PromptChoice.self)
            else { return nil }
            self = .answerCorrected(prompt: prompt, from: from, to: to)
        case .sessionChanged:
            guard let session = node["session"]?.string, let active = node["active"]?.bool else { return nil }
            self = .sessionChanged(session: session, active: active)
        case .reset:
            guard let reason = node.value("reason", as: ResetReason.self) else { return nil }
            self = .reset(reason)
        }
    }
}
