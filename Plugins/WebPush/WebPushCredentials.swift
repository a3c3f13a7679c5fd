public import HubCore

extension PushCredentials {
    /// The app's `credentials.webpush`.
    public var webpush: WebPushCredentials? {
        get { self[WebPushCredentials.self] }
        set { self[WebPushCredentials.self] = newValue }
    }
}

/// One app's Web Push credentials: its VAPID key pair and contact.
public struct WebPushCredentials: ApplicationServerKeyCredentials {
    public static let transport = TransportID.webpush
    public var vapid: VAPIDCredentials

    public init(vapid: VAPIDCredentials) { self.vapid = vapid }

    /// The VAPID public key pages subscribe with (served by `GET /v1/apps/{app}/webpush`).
    public var applicationServerKey: String { vapid.key.publicKeyBase64URL }

    /// The public key (what pages subscribe with) and the subject; never the private key.
    public var summary: String { "VAPID key \(vapid.key.publicKeyBase64URL) (\(vapid.subject))" }
}
