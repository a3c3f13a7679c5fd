public import Foundation

extension Hub {
    /// Every problem of a publish, as Graph checked them; empty when the draft is valid. The user
    /// ID, `appNotificationId` and `groupName` follow the ``Identifier`` grammar.
    public func validate(
        _ draft: NotificationDraft, for app: CrossDeviceApp, userID: String, now: Date
    )
        -> [HubError.FieldError]
    {
        var errors: [HubError.FieldError] = []
        func fail(_ field: String, _ message: String) { errors.append(.init(field: field, message: message)) }
        if let violation = Identifier.violation(in: userID) { fail("userId", violation.message) }
        if let violation = Identifier.violation(in: draft.appNotificationId) {
            fail("appNotificationId", draft.appNotificationId.isEmpty ? "is required" : violation.message)
        }
        if let group = draft.groupName, let violation = Identifier.violation(in: group) {
            fail("groupName", violation.message)
        }
        if !NotificationPriority.known.contains(draft.priority) {
            fail("priority", "must be one of none, low, high")
        }
        let payload = draft.payload
        if payload.rawContent == nil && payload.visualContent == nil {
            fail("payload", "give rawContent and/or visualContent")
        }
        if let visual = payload.visualContent, visual.title.trimmingCharacters(in: .whitespaces).isEmpty {
            fail("payload.visualContent.title", "is required when visualContent is given")
        }
        if let visual = payload.visualContent { errors += Self.problems(of: visual) }
        if let expiry = draft.expirationDateTime {
            if expiry <= now {
                fail("expirationDateTime", "must be in the future")
            } else if expiry.timeIntervalSince(now) > configuration.maxLifetime.seconds + 1 {
                let days = Int(configuration.maxLifetime.seconds / 86_400)
                fail("expirationDateTime", "must be at most \(days) days ahead")
            }
        }
        if let scheduled = draft.scheduledDateTime {
            let days = Int(configuration.maxLifetime.seconds / 86_400)
            if scheduled.timeIntervalSince(now) > configuration.maxLifetime.seconds + 1 {
                fail("scheduledDateTime", "must be at most \(days) days ahead")
            } else if let expiry = draft.expirationDateTime, expiry <= scheduled {
                fail("scheduledDateTime", "must be before expirationDateTime")
            }
        }
        if let ttl = draft.displayTimeToLive, ttl < 0 { fail("displayTimeToLive", "must be 0 or more seconds") }
        for (index, platform) in draft.targetPolicy.platformTypes.enumerated()
        where app.platforms[platform] == nil {
            let supported = app.supportedPlatforms.map(\.rawValue).joined(separator: ", ")
            fail("targetPolicy.platformTypes[\(index)]", "'\(platform)' is not a platform of this app (\(supported))")
        }
        if let fallback = draft.fallbackPolicy {
            if !FallbackPolicy.allowedTimeout.contains(fallback.timeoutSeconds) {
                fail("fallbackPolicy.timeoutSeconds", "must be 60–600 seconds")
            }
            for (index, platform) in fallback.platformTypes.enumerated() {
                if app.platforms[platform] == nil {
                    let supported = app.supportedPlatforms.map(\.rawValue).joined(separator: ", ")
                    fail(
                        "fallbackPolicy.platformTypes[\(index)]",
                        "'\(platform)' is not a platform of this app (\(supported))")
                } else if !draft.targetPolicy.includes(platform) {
                    fail(
                        "fallbackPolicy.platformTypes[\(index)]",
                        "'\(platform)' is not in targetPolicy.platformTypes; a fallback goes only to targeted devices")
                }
            }
            if let visual = fallback.visualContent {
                if visual.title.trimmingCharacters(in: .whitespaces).isEmpty {
                    fail("fallbackPolicy.visualContent.title", "is required when visualContent is given")
                }
                for (field, text) in [("title", visual.title), ("body", visual.body)]
                where text?.utf8.contains(0) == true {
                    fail("fallbackPolicy.visualContent.\(field)", "must not contain the character U+0000 (NUL)")
                }
            }
        }
        if let mode = draft.deliveryMode, !DeliveryMode.known.contains(mode) {
            fail("deliveryMode", "must be shoulderTap or visible")
        }
        for (field, text) in [
            ("payload.rawContent", payload.rawContent), ("payload.visualContent.title", payload.visualContent?.title),
            ("payload.visualContent.body", payload.visualContent?.body),
        ]
        where text?.utf8.contains(0) == true {
            // PostgreSQL's jsonb cannot hold it; refused on every store, so that a hub.yaml's
            // store never changes what a publisher may send.
            fail(field, "must not contain the character U+0000 (NUL)")
        }
        if let tooLarge = payloadSizeError(payload) { errors.append(tooLarge) }
        return errors
    }

    /// The error of a payload over `maxPayloadBytes` (JSON-encoded), if it is.
    func payloadSizeError(_ payload: NotificationPayload) -> HubError.FieldError? {
        guard Self.encodedSizeBound(of: payload) > configuration.maxPayloadBytes else { return nil }
        let size = Self.encodedSize(of: payload)
        guard size > configuration.maxPayloadBytes else { return nil }
        return .init(field: "payload", message: "is \(size) bytes; the limit is \(configuration.maxPayloadBytes) bytes")
    }

    static func encodedSize(of payload: NotificationPayload) -> Int {
        payload.storedJSON.utf8.count
    }

    /// At least ``encodedSize(of:)``, without encoding: each byte of text takes at most six in
    /// JSON (`\u00XX`), and the keys and punctuation fewer than 64. When this is within the limit
    /// the payload is (the publish path skips a JSONEncoder per publish).
    static func encodedSizeBound(of payload: NotificationPayload) -> Int {
        let text =
            (payload.rawContent?.utf8.count ?? 0) + (payload.visualContent?.title.utf8.count ?? 0)
            + (payload.visualContent?.body?.utf8.count ?? 0)
        // The badge, the tile flag, the localisation keys, their arguments and their punctuation.
        let extra = payload.visualContent.map { visual in
            visual.localisationTexts.reduce(0) { $0 + 6 * $1.utf8.count + 3 } + 128
        }
        return 64 + 6 * text + (extra ?? 0)
    }
}
