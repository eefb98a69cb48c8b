/// What the app last reported about the device it runs on (`contextReported`, C1).
///
/// Every field is optional: a context nobody reported is "current iOS with all keys" (SPEC §2),
/// so a backend that never sends `contextReported` still gets Core Location's current rules.
public struct DeviceContext: Sendable, Hashable {
    public var platform: Platform?
    /// The OS version as reported, e.g. "17.4". Unknown means the current release.
    public var osVersion: OSVersion?
    public var appVersion: String?
    /// The Info.plist usage-description keys the build declares. Unknown means all of them.
    public var usageDescriptions: Set<String>?
    /// Keys of NSLocationTemporaryUsageDescriptionDictionary. Unknown means any purpose key.
    public var temporaryUsagePurposeKeys: Set<String>?
    /// NSLocationDefaultAccuracyReduced, once reported.
    public var defaultAccuracyReduced: Bool?
    /// NSLocationRequireExplicitServiceSession (SPEC §11).
    public var requireExplicitServiceSession: Bool?
    /// `location` in UIBackgroundModes (SPEC §11, V5).
    public var backgroundLocationMode: Bool?
    /// Android (SPEC §12): the device's SDK_INT (1..99).
    public var apiLevel: Int? {
        get { apiLevelStorage.map(Int.init) }
        set { apiLevelStorage = newValue.flatMap(UInt8.init(exactly:)) }
    }
    /// Android: the app's targetSdkVersion (1..99).
    public var targetSdk: Int? {
        get { targetSdkStorage.map(Int.init) }
        set { targetSdkStorage = newValue.flatMap(UInt8.init(exactly:)) }
    }
    // A byte each: every distinct context is held in the gate's cache (`SharedDeviceParts`).
    private var apiLevelStorage: UInt8?
    private var targetSdkStorage: UInt8?
    /// Android: the location permissions the manifest declares. Unknown means the four of
    /// `AndroidPermission.defaultDeclared` (not `locationButton`).
    public var declaredPermissions: Set<AndroidPermission>?
    /// Android (SPEC §12, B8): the manifest marks ACCESS_FINE_LOCATION
    /// `usesPermissionFlags="onlyForLocationButton"` (`REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON`):
    /// on API 37+ only the location button can grant precise. Unknown means false.
    public var fineOnlyForLocationButton: Bool?
    /// I1: the app's own id for this installation, as a `contextReported` carries it. Only the
    /// event holds it: the state keeps it apart (`DeviceState.installID`), so that a state's
    /// context stays one that many devices share in the gate's cache.
    public var installID: String?

    public init(
        platform: Platform? = nil,
        osVersion: OSVersion? = nil,
        appVersion: String? = nil,
        usageDescriptions: Set<String>? = nil,
        temporaryUsagePurposeKeys: Set<String>? = nil,
        defaultAccuracyReduced: Bool? = nil,
        requireExplicitServiceSession: Bool? = nil,
        backgroundLocationMode: Bool? = nil,
        apiLevel: Int? = nil,
        targetSdk: Int? = nil,
        declaredPermissions: Set<AndroidPermission>? = nil,
        installID: String? = nil,
        fineOnlyForLocationButton: Bool? = nil
    ) {
        self.platform = platform
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.usageDescriptions = usageDescriptions
        self.temporaryUsagePurposeKeys = temporaryUsagePurposeKeys
        self.defaultAccuracyReduced = defaultAccuracyReduced
        self.requireExplicitServiceSession = requireExplicitServiceSession
        self.backgroundLocationMode = backgroundLocationMode
        self.apiLevel = apiLevel
        self.targetSdk = targetSdk
        self.declaredPermissions = declaredPermissions
        self.installID = installID
        self.fineOnlyForLocationButton = fineOnlyForLocationButton
    }

    /// The platform the rules use: iOS when unknown.
    public var effectivePlatform: Platform { platform ?? .iOS }

    /// The family whose rules apply (`PlatformRules`).
    public var family: PlatformFamily { effectivePlatform.family }

    /// The OS major version analytics group by: the API level on Android.
    public var osMajor: Int? { effectivePlatform == .android ? apiLevel : osVersion?.major }

    /// True only on iOS or iPadOS with a known version below `version`: the OS-version thresholds
    /// of SPEC §2 apply to those platforms alone, and an unknown version is the current one.
    public func isIOSFamily(below version: OSVersion) -> Bool {
        guard effectivePlatform.isIOSFamily, let osVersion else { return false }
        return osVersion < version
    }

    /// iOS/iPadOS 13.0 to 13.3, where the escalation was silent (A11).
    public var isSilentEscalationRelease: Bool {
        guard effectivePlatform.isIOSFamily, let osVersion else { return false }
        return osVersion.major == 13 && osVersion.minor <= 3
    }

    /// Whether the build declares a usage-description key.
    public func declares(_ key: String) -> Bool {
        usageDescriptions?.contains(key) ?? true
    }

    /// Whether the build declares a temporary-accuracy purpose key (K3).
    public func declaresPurposeKey(_ key: String) -> Bool {
        temporaryUsagePurposeKeys?.contains(key) ?? true
    }

    /// Whether any purpose key is declared, so that temporary full accuracy can be asked for.
    public var declaresAnyPurposeKey: Bool {
        temporaryUsagePurposeKeys.map { !$0.isEmpty } ?? true
    }
}
