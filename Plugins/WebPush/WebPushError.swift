import Foundation

/// What went wrong with a Web Push send or a subscription, as a growable set of codes.
public struct WebPushErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The endpoint's token is not a subscription (`endpoint`, `keys.p256dh`, `keys.auth`).
    public static let invalidSubscription = WebPushErrorCode(rawValue: "invalidSubscription")
    /// The push-service URL is not https, names a private or loopback address, or is not on the allow-list.
    public static let endpointNotAllowed = WebPushErrorCode(rawValue: "endpointNotAllowed")
    /// The plaintext does not fit one 4,096-byte record.
    public static let payloadTooLarge = WebPushErrorCode(rawValue: "payloadTooLarge")
    /// The app has no VAPID key on this hub, or its key or subject is unusable.
    public static let vapidUnavailable = WebPushErrorCode(rawValue: "vapidUnavailable")
    /// 400: the push service found the request malformed (a header, the encoding).
    public static let badRequest = WebPushErrorCode(rawValue: "badRequest")
    /// 401 or 403: the push service refuses the VAPID token or key.
    public static let unauthorized = WebPushErrorCode(rawValue: "unauthorized")
    /// 404 or 410: the subscription expired or the user unsubscribed.
    public static let subscriptionGone = WebPushErrorCode(rawValue: "subscriptionGone")
    /// 413: the push service refused the body's size.
    public static let tooLarge = WebPushErrorCode(rawValue: "tooLarge")
    /// 429: too many requests.
    public static let tooManyRequests = WebPushErrorCode(rawValue: "tooManyRequests")
    /// 5xx: the push service failed.
    public static let serviceFailure = WebPushErrorCode(rawValue: "serviceFailure")
    /// No answer: connection, TLS or timeout.
    public static let networkFailure = WebPushErrorCode(rawValue: "networkFailure")
    /// Another status.
    public static let unexpectedStatus = WebPushErrorCode(rawValue: "unexpectedStatus")

    /// The code for a push service's non-2xx status.
    public init(status: Int) {
        switch status {
        case 400: self = .badRequest
        case 401, 403: self = .unauthorized
        case 404, 410: self = .subscriptionGone
        case 413: self = .tooLarge
        case 429: self = .tooManyRequests
        case 500...599: self = .serviceFailure
        default: self = .unexpectedStatus
        }
    }
}

/// A Web Push failure: a code, a message that says what to do, the push service's status and
/// reason when it answered, and when to retry if it said so.
public struct WebPushError: Error, Sendable, CustomStringConvertible {
    public var code: WebPushErrorCode
    public var message: String
    /// The push service's status, when it answered.
    public var status: Int?
    /// The push service's body (a JSON `reason` at Apple, text elsewhere), at most 512 bytes.
    public var reason: String?
    /// From `Retry-After`.
    public var retryAfter: Duration?
    public var underlying: (any Error)?

    public init(
        code: WebPushErrorCode, message: String, status: Int? = nil, reason: String? = nil, retryAfter: Duration? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    public var description: String {
        var text = "Web Push \(code)"
        if let status { text += " (\(status))" }
        text += ": \(message)"
        if let reason, !reason.isEmpty { text += " — \(reason)" }
        return text
    }
}
