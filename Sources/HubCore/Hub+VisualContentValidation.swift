import Foundation

extension Hub {
    /// The largest badge count a publish may give (APNs and FCM read it as a 32-bit integer).
    public static let maximumBadge = 2_147_483_647

    /// The problems of the fields `visualContent` has besides its title and body: localisation keys
    /// and arguments, the badge and the tile flag. Paths are those of the publish body.
    static func problems(of visual: VisualContent) -> [HubError.FieldError] {
        var errors: [HubError.FieldError] = []
        let prefix = "payload.visualContent"
        func fail(_ field: String, _ message: String) {
            errors.append(.init(field: "\(prefix).\(field)", message: message))
        }
        for (name, key, arguments) in [
            ("title", visual.titleLocKey, visual.titleLocArgs), ("body", visual.bodyLocKey, visual.bodyLocArgs),
        ] {
            if let key {
                if key.trimmingCharacters(in: .whitespaces).isEmpty {
                    fail(
                        "\(name)LocKey", "must not be empty: give a key of the app's localised strings, or leave it out"
                    )
                } else if key.utf8.contains(0) {
                    fail("\(name)LocKey", "must not contain the character U+0000 (NUL)")
                }
            }
            if let arguments {
                if key == nil {
                    fail("\(name)LocArgs", "needs \(name)LocKey: the arguments fill that key's placeholders")
                }
                for (index, argument) in arguments.enumerated() where argument.utf8.contains(0) {
                    fail("\(name)LocArgs[\(index)]", "must not contain the character U+0000 (NUL)")
                }
            }
        }
        if let badge = visual.badge, !(0...maximumBadge).contains(badge) {
            fail("badge", "must be a count from 0 (clears the badge) to \(maximumBadge), not \(badge)")
        }
        return errors
    }
}
