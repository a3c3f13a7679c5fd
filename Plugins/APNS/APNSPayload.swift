import HubCore

/// The body of one APNs request. Its push type and priority come with it, so a request cannot
/// say `background` while carrying an alert, or send a background push at priority 10.
///
/// ```swift
/// let tap = APNSPayload.background(APNSBackgroundPayload(custom: ["hub": ["v": 42]]))
/// let alert = APNSPayload.alert(APNSAlertPayload(alert: APNSAlert(title: "Hi", body: "…"), threadID: "chat"))
/// let bytes = try alert.encoded(trimmingAlertBody: true)
/// ```
public struct APNSPayload: Sendable, Hashable {
    enum Content: Sendable, Hashable {
        case alert(APNSAlertPayload)
        case background(APNSBackgroundPayload)
        case voip(APNSVoIPPayload)
    }

    let content: Content
    /// The `apns-priority` this payload is sent with.
    public let priority: APNSPriority

    /// A visible notification (`apns-push-type: alert`); priority 10 by default, or 5 / 1.
    public static func alert(_ payload: APNSAlertPayload, priority: APNSPriority = .immediate) -> APNSPayload {
        APNSPayload(content: .alert(payload), priority: priority)
    }

    /// A silent `content-available` push (`apns-push-type: background`), always priority 5.
    public static func background(_ payload: APNSBackgroundPayload = APNSBackgroundPayload()) -> APNSPayload {
        APNSPayload(content: .background(payload), priority: .considerate)
    }

    /// A PushKit VoIP push (`apns-push-type: voip`, topic `<bundle ID>.voip`, up to 5120 bytes).
    public static func voip(_ payload: APNSVoIPPayload, priority: APNSPriority = .immediate) -> APNSPayload {
        APNSPayload(content: .voip(payload), priority: priority)
    }

    public var pushType: APNSPushType {
        switch content {
        case .alert: .alert
        case .background: .background
        case .voip: .voip
        }
    }

    /// The most bytes APNs accepts for this push type.
    public var sizeLimit: Int { pushType.payloadLimit }

    /// Encodes the payload as compact JSON.
    ///
    /// - Parameter trimmingAlertBody: when the encoding is over ``sizeLimit``, shorten the alert's
    ///   body, then its title, by the hub's one rule (`VisibleTextFit`: on a `Character` boundary,
    ///   ending with "…") until it fits.
    /// - Throws: ``APNSError/Code/payloadTooLarge`` when it does not fit (after trimming, if asked);
    ///   ``APNSError/Code/invalidPayload`` for a custom `aps` key, a negative badge, a relevance score
    ///   outside 0…1, a non-finite number or an alert push that shows nothing.
    public func encoded(trimmingAlertBody: Bool = false) throws(APNSError) -> [UInt8] {
        let full = try encode(text: nil)
        if full.count <= sizeLimit { return full }
        guard trimmingAlertBody, case .alert(let payload) = content,
            payload.alert.title != nil || payload.alert.body != nil
        else {
            throw tooLarge(full.count)
        }
        let alert = payload.alert
        // Everything but the text: the budget of the title and body is what is left of the limit.
        let empty = VisibleTextFit.Text(title: "", body: alert.body == nil ? nil : "")
        let base = try encode(text: empty).count
        guard
            let text = VisibleTextFit.fit(
                title: alert.title ?? "", body: alert.body, budget: sizeLimit - base, cost: VisibleTextFit.jsonCost)
        else {
            throw tooLarge(full.count)
        }
        let fitted = try encode(text: text)
        guard fitted.count <= sizeLimit else { throw tooLarge(full.count) }
        return fitted
    }

    private func tooLarge(_ size: Int) -> APNSError {
        APNSError(
            .payloadTooLarge,
            "the \(pushType) payload is \(size) bytes; APNs accepts at most \(sizeLimit): shorten the notification")
    }

    /// Encodes with `text` in place of the alert's title and body when given (an empty title stands
    /// for an alert without one).
    private func encode(text: VisibleTextFit.Text?) throws(APNSError) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        switch content {
        case .alert(let payload):
            let title = text.map { $0.title.isEmpty && payload.alert.title == nil ? nil : $0.title }
            try payload.writeAPS(
                to: &writer, title: title ?? payload.alert.title, body: text == nil ? payload.alert.body : text?.body)
            try Self.writeCustom(payload.custom, to: &writer)
        case .background(let payload):
            writer.key("aps")
            writer.beginObject()
            writer.key("content-available")
            writer.integer(1)
            writer.endObject()
            try Self.writeCustom(payload.custom, to: &writer)
        case .voip(let payload):
            try Self.writeCustom(payload.custom, to: &writer)
        }
        writer.endObject()
        return writer.bytes
    }

    static func writeCustom(_ custom: [String: APNSJSON], to writer: inout JSONWriter) throws(APNSError) {
        for key in custom.keys.sorted() {
            guard key != "aps" else {
                throw APNSError(.invalidPayload, "the custom key 'aps' is reserved for Apple's dictionary")
            }
            writer.key(key)
            try writer.value(custom[key]!)
        }
    }
}

/// A silent push that wakes the app in the background: `aps` holds only `content-available: 1`;
/// there is no alert, badge or sound to set. Apple lets the system throttle these.
public struct APNSBackgroundPayload: Sendable, Hashable {
    /// Keys beside `aps`, for the app to read (the hub sends `{"hub": {"app": …, "v": …}}`).
    public var custom: [String: APNSJSON]
    public init(custom: [String: APNSJSON] = [:]) { self.custom = custom }
}

/// A PushKit VoIP push: the app's own keys, nothing Apple renders.
public struct APNSVoIPPayload: Sendable, Hashable {
    public var custom: [String: APNSJSON]
    public init(custom: [String: APNSJSON] = [:]) { self.custom = custom }
}
