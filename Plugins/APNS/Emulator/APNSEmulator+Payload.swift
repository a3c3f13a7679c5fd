extension APNSEmulator {
    /// Keys of the `alert` dictionary and whether each holds text (`true`) or a list of text.
    private static let alertKeys: [String: Bool] = [
        "title": true, "subtitle": true, "body": true, "launch-image": true, "title-loc-key": true,
        "subtitle-loc-key": true, "loc-key": true, "action-loc-key": true, "title-loc-args": false,
        "subtitle-loc-args": false, "loc-args": false,
    ]
    private static let textKeys = ["thread-id", "category", "target-content-id", "filter-criteria"]
    private static let interruptionLevels: Set<String> = ["passive", "active", "time-sensitive", "critical"]

    /// What is wrong with a body for `pushType` (step 7 of the type's documentation), or `nil`.
    static func payloadProblem(_ body: [UInt8], pushType: String) -> APNSEmulatorRejection? {
        let limit = pushTypes[pushType]?.limit ?? 4096
        if body.isEmpty { return .init(400, "PayloadEmpty", "the body is empty") }
        if body.count > limit {
            return .init(413, "PayloadTooLarge", "the body is \(body.count) bytes; \(pushType) allows \(limit)")
        }
        func bad(_ note: String) -> APNSEmulatorRejection { .init(400, "BadPayload", note) }
        guard let top = JSON.parse(body)?.objectValue else { return bad("the body is not a JSON object") }
        let aps: [String: JSON]?
        if let value = top["aps"] {
            guard let object = value.objectValue else { return bad("aps must be a dictionary") }
            aps = object
        } else {
            aps = nil
        }
        switch pushType {
        case "alert":
            guard let aps, aps["alert"] != nil || aps["badge"] != nil || aps["sound"] != nil else {
                return bad("an alert push needs aps.alert, aps.badge or aps.sound")
            }
        case "background":
            guard let aps, aps["content-available"] == .integer(1) else {
                return bad("a background push needs aps.content-available: 1")
            }
            if let shown = ["alert", "badge", "sound"].first(where: { aps[$0] != nil }) {
                return bad("a background push must not carry aps.\(shown)")
            }
        default:
            break
        }
        return aps.flatMap { typeProblem(in: $0, pushType: pushType) }
    }

    /// Checks the type of each `aps` key Apple defines; other keys are ignored, as Apple does.
    private static func typeProblem(in aps: [String: JSON], pushType: String) -> APNSEmulatorRejection? {
        func bad(_ note: String) -> APNSEmulatorRejection { .init(400, "BadPayload", note) }
        if let alert = aps["alert"], alert.stringValue == nil {
            guard let fields = alert.objectValue else { return bad("aps.alert must be text or a dictionary") }
            for (key, value) in fields {
                guard let isText = alertKeys[key] else { continue }
                let ok =
                    isText ? value.stringValue != nil : value.arrayValue?.allSatisfy { $0.stringValue != nil } == true
                if !ok { return bad("aps.alert.\(key) must be \(isText ? "text" : "a list of text")") }
            }
        }
        if let badge = aps["badge"], (badge.integerValue ?? -1) < 0 {
            return bad("aps.badge must be a number of 0 or more")
        }
        if let sound = aps["sound"], sound.stringValue == nil {
            guard let fields = sound.objectValue else { return bad("aps.sound must be text or a dictionary") }
            if let critical = fields["critical"], ![0, 1].contains(critical.integerValue ?? -1) {
                return bad("aps.sound.critical must be 0 or 1")
            }
            if let name = fields["name"], name.stringValue == nil { return bad("aps.sound.name must be text") }
            if let volume = fields["volume"], !(0...1).contains(volume.doubleValue ?? -1) {
                return bad("aps.sound.volume must be a number from 0 to 1")
            }
        }
        for key in ["content-available", "mutable-content"] {
            if let value = aps[key], value != .integer(1), value != .integer(0) {
                return bad("aps.\(key) must be the number 1")
            }
        }
        for key in textKeys where aps[key] != nil && aps[key]?.stringValue == nil {
            return bad("aps.\(key) must be text")
        }
        if let level = aps["interruption-level"], !interruptionLevels.contains(level.stringValue ?? "") {
            return bad("aps.interruption-level must be passive, active, time-sensitive or critical")
        }
        if let score = aps["relevance-score"] {
            guard let value = score.doubleValue else { return bad("aps.relevance-score must be a number") }
            if pushType != "liveactivity" && !(0...1).contains(value) {
                return bad("aps.relevance-score must be from 0 to 1")
            }
        }
        return nil
    }
}
