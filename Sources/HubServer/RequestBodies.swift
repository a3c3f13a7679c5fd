import Foundation
import HubCore

// Lenient readers of the request bodies: each returns what it could read and every field error.

/// A Graph-shaped publish body (DESIGN §1): `appNotificationId`, `payload {rawContent,
/// visualContent}` (see `FieldReader.visualContent(_:)`), `targetPolicy {platformTypes}`,
/// `priority` (any case), `groupName`, `displayTimeToLive`, `expirationDateTime`,
/// `fallbackPolicy {timeoutSeconds}` or Graph's `fallbackPolicy {endpointFallback {…}}`,
/// `deliveryMode`, `scheduledDateTime`. Graph's `targetHostName`, when given, must name the app
/// published to; whole numbers may be sent as numeric strings (as Graph's own examples do); a body
/// wrapped as `{"notification": {…}}` is unwrapped; other unknown fields are ignored, as Graph did.
struct PublishBody {
    var draft: NotificationDraft
    var reader: FieldReader
    /// Whether `fallbackPolicy` came in Graph's `endpointFallback` shape (errors then name its fields).
    var graphFallback = false

    init(_ body: [String: JSONValue], app: CrossDeviceApp) {
        let body = Self.unwrapped(body)
        var reader = FieldReader()
        if let host = reader.string(body, "targetHostName"), host.lowercased() != app.id.lowercased() {
            reader.fail("targetHostName", "is '\(host.prefix(256))', but this request publishes to the app '\(app.id)'")
        }
        let appNotificationId = reader.string(body, "appNotificationId")
        if body["appNotificationId"] == nil || body["appNotificationId"] == .null {
            reader.fail("appNotificationId", "is required")
        }
        var payload = NotificationPayload()
        if let fields = reader.object(body, "payload") {
            payload.rawContent = reader.string(fields, "rawContent", in: "payload")
            if let visual = reader.object(fields, "visualContent", in: "payload") {
                payload.visualContent = reader.visualContent(visual)
            }
        }
        var target = TargetPolicy()
        if let fields = reader.object(body, "targetPolicy") {
            let names = reader.strings(fields, "platformTypes", in: "targetPolicy") ?? []
            // An unreadable item stays in place (as no platform) so that the hub's errors about
            // later items name their index in the body.
            target.platformTypes = names.map { Platform(rawValue: $0?.lowercased() ?? "") }
        }
        var priority = NotificationPriority.none
        if let text = reader.string(body, "priority") {
            priority = NotificationPriority(caseInsensitive: text) ?? NotificationPriority(rawValue: text)
        }
        var fallback: FallbackPolicy?
        if let fields = reader.object(body, "fallbackPolicy") {
            (fallback, graphFallback) = Self.fallbackPolicy(fields, &reader)
        }
        var mode: DeliveryMode?
        if let text = reader.string(body, "deliveryMode") {
            mode =
                DeliveryMode.known.first { $0.rawValue.lowercased() == text.lowercased() }
                ?? DeliveryMode(rawValue: text)
        }
        draft = NotificationDraft(
            appNotificationId: appNotificationId ?? "",
            groupName: reader.string(body, "groupName"),
            priority: priority,
            payload: payload,
            targetPolicy: target,
            displayTimeToLive: reader.integer(body, "displayTimeToLive"),
            expirationDateTime: reader.date(body, "expirationDateTime"),
            fallbackPolicy: fallback,
            deliveryMode: mode,
            scheduledDateTime: reader.date(body, "scheduledDateTime"))
        self.reader = reader
    }

    /// The decode errors followed by the hub's semantic ones (named as the body named them),
    /// leaving out semantic errors of fields that already failed to decode (a field is reported once).
    func merged(with semantic: [HubError.FieldError]) -> [HubError.FieldError] {
        reader.errors + semantic.map(named).filter { !reader.hasError(at: $0.field) }
    }
}

/// `{platform, appId, transport, token?, channelUri?, environment?, declarative?, attributes?,
/// appDisplayName?}`; `channelUri` is the channel-URI name of the token. `attributes` (string
/// values) are what the transport needs besides the token; `environment` is the attribute of that
/// name (the APNs environment) and `declarative` (a boolean, Web Push) the attribute `declarative`
/// as `true` or `false`, kept as fields of their own for the clients that send them so.
struct RegistrationBody {
    var registration: EndpointRegistration
    var reader: FieldReader

    init(_ body: [String: JSONValue]) {
        var reader = FieldReader()
        func required(_ key: String) -> String {
            let value = reader.string(body, key)
            if value == nil && !reader.hasError(at: key) { reader.fail(key, "is required") }
            return value ?? ""
        }
        let platform = required("platform")
        let appId = required("appId")
        let transport = required("transport")
        let token = reader.string(body, "token")
        let channelUri = reader.string(body, "channelUri")
        if let token, let channelUri, token != channelUri {
            reader.fail("channelUri", "give the token or the channel URI, not both")
        }
        var attributes: [String: String] = [:]
        if let object = reader.object(body, "attributes") {
            for key in object.keys.sorted() {
                if let value = reader.string(object, key, in: "attributes") { attributes[key] = value }
            }
        }
        if let environment = reader.string(body, "environment") { attributes["environment"] = environment.lowercased() }
        // Web Push: the subscription shows visible notifications from declarative push messages.
        if let declarative = reader.bool(body, "declarative") { attributes["declarative"] = String(declarative) }
        registration = EndpointRegistration(
            platform: Platform(rawValue: platform.lowercased()),
            appId: appId,
            transport: TransportID(transport),
            token: token ?? channelUri,
            attributes: attributes,
            appDisplayName: reader.string(body, "appDisplayName"))
        self.reader = reader
    }
}

/// `{readState?, userActionState?}` of a device's PATCH.
struct StateBody {
    var readState: ReadState?
    var userActionState: UserActionState?
    var reader: FieldReader

    init(_ body: [String: JSONValue]) {
        var reader = FieldReader()
        readState = reader.string(body, "readState").map { ReadState(rawValue: $0) }
        userActionState = reader.string(body, "userActionState").map { UserActionState(rawValue: $0) }
        self.reader = reader
    }
}
