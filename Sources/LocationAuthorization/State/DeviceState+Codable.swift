/// The JSON form of a device state (SPEC §5 `state` objects): every field of §2 plus the derived
/// `status`; `pendingPrompt` is `none` when nothing is pending. The same form is stored in the
/// projection, so decoding accepts exactly what encoding writes.
extension DeviceState: Codable {
    private enum CodingKeys: String, CodingKey {
        case authorization, provisional, temporary, alwaysPromptUsed, pendingPrompt, accuracy
        case temporaryFullAccuracy, locationServicesEnabled, restricted, inUse, inferredAllowWhileUsing, context, status
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        authorization = try container.decode(Authorization.self, forKey: .authorization)
        provisional = try container.decode(Bool.self, forKey: .provisional)
        temporary = try container.decode(Bool.self, forKey: .temporary)
        alwaysPromptUsed = try container.decode(Bool.self, forKey: .alwaysPromptUsed)
        let prompt = try container.decode(String.self, forKey: .pendingPrompt)
        pendingPrompt = prompt == "none" ? nil : Prompt(rawValue: prompt)
        accuracy = try container.decode(Accuracy.self, forKey: .accuracy)
        temporaryFullAccuracy = try container.decode(Bool.self, forKey: .temporaryFullAccuracy)
        locationServicesEnabled = try container.decode(Bool.self, forKey: .locationServicesEnabled)
        restricted = try container.decode(Bool.self, forKey: .restricted)
        inUse = try container.decode(Bool.self, forKey: .inUse)
        // Absent in states stored before O2.
        inferredAllowWhileUsing = try container.decodeIfPresent(Bool.self, forKey: .inferredAllowWhileUsing) ?? false
        context = try container.decodeIfPresent(DeviceContext.self, forKey: .context) ?? DeviceContext()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(authorization, forKey: .authorization)
        try container.encode(provisional, forKey: .provisional)
        try container.encode(temporary, forKey: .temporary)
        try container.encode(alwaysPromptUsed, forKey: .alwaysPromptUsed)
        try container.encode(pendingPrompt?.rawValue ?? "none", forKey: .pendingPrompt)
        try container.encode(accuracy, forKey: .accuracy)
        try container.encode(temporaryFullAccuracy, forKey: .temporaryFullAccuracy)
        try container.encode(locationServicesEnabled, forKey: .locationServicesEnabled)
        try container.encode(restricted, forKey: .restricted)
        try container.encode(inUse, forKey: .inUse)
        try container.encode(inferredAllowWhileUsing, forKey: .inferredAllowWhileUsing)
        try container.encode(context, forKey: .context)
        try container.encode(status, forKey: .status)
    }
}
