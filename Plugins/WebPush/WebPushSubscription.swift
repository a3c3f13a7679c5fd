import Foundation

/// A browser's push subscription: the push-service URL and the keys that encrypt for it.
///
/// An endpoint of the web platform with transport `webpush` carries its subscription as its
/// `token`: the JSON of the browser's `PushSubscription` (`JSON.stringify(subscription)` or
/// `subscription.toJSON()`):
///
/// ```json
/// {"endpoint": "https://fcm.googleapis.com/fcm/send/…", "expirationTime": null,
///  "keys": {"p256dh": "BCVxsr7N…", "auth": "BTBZMqHH6r4Tts7J_aSIgg"}}
/// ```
public struct WebPushSubscription: Sendable, Hashable {
    /// The push resource: where messages are POSTed.
    public var endpoint: String
    /// The user agent's uncompressed P-256 public key (65 bytes, starting with 0x04).
    public var p256dh: [UInt8]
    /// The 16-byte authentication secret.
    public var auth: [UInt8]

    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8]) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    private struct Wire: Codable {
        struct Keys: Codable {
            var p256dh: String?
            var auth: String?
        }
        var endpoint: String?
        var keys: Keys?
    }

    /// Reads a subscription from an endpoint's token (the `PushSubscription` JSON).
    /// - Throws: ``WebPushError`` (``WebPushErrorCode/invalidSubscription``) saying which field is wrong.
    public init(token: String) throws(WebPushError) {
        func invalid(_ message: String) -> WebPushError { WebPushError(code: .invalidSubscription, message: message) }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(token.utf8)) else {
            throw invalid(
                "the token must be the browser's PushSubscription as JSON: "
                    + #"{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}"#)
        }
        guard let endpoint = wire.endpoint, !endpoint.isEmpty else { throw invalid("the subscription has no endpoint") }
        guard let p256dh = wire.keys?.p256dh.flatMap(Base64URL.decode) else {
            throw invalid("keys.p256dh is missing or not URL-safe base64")
        }
        guard p256dh.count == 65, p256dh.first == 0x04 else {
            throw invalid(
                "keys.p256dh must be an uncompressed P-256 public key (65 bytes); it is \(p256dh.count) bytes")
        }
        guard let auth = wire.keys?.auth.flatMap(Base64URL.decode) else {
            throw invalid("keys.auth is missing or not URL-safe base64")
        }
        guard auth.count == 16 else { throw invalid("keys.auth must be 16 bytes; it is \(auth.count) bytes") }
        self.init(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// The subscription as the JSON a browser gives, for tests and tools.
    public var json: String {
        let keys = #"{"p256dh":"\#(Base64URL.encode(p256dh))","auth":"\#(Base64URL.encode(auth))"}"#
        let escaped = endpoint.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return #"{"endpoint":"\#(escaped)","keys":\#(keys)}"#
    }

    /// The push service's origin (`scheme://host[:port]`), the VAPID `aud` claim; `nil` if unparsable.
    public var origin: String? {
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme,
            let host = components.percentEncodedHost, !host.isEmpty
        else { return nil }
        let defaultPort = scheme.lowercased() == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        return "\(scheme.lowercased())://\(host.lowercased())\(port)"
    }
}
