/// An FCM `FcmError.errorCode`, plus the hub's own codes for failures that happen before FCM answers.
///
/// A struct with static members rather than an enum, so a code Google adds later is kept as it came
/// (see ``isKnown``) instead of breaking decoding or clients' `switch`es.
public struct FCMErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// No information was given. Treat as unknown; log it.
    public static let unspecifiedError = FCMErrorCode(rawValue: "UNSPECIFIED_ERROR")
    /// The request is wrong (token format, package, size, reserved key, field). Fix, do not resend as is.
    public static let invalidArgument = FCMErrorCode(rawValue: "INVALID_ARGUMENT")
    /// The app instance is gone (uninstalled, token expired). Drop the token.
    public static let unregistered = FCMErrorCode(rawValue: "UNREGISTERED")
    /// The token belongs to another Firebase project. Drop it for this project.
    public static let senderIDMismatch = FCMErrorCode(rawValue: "SENDER_ID_MISMATCH")
    /// Project, device or topic rate exceeded. Back off at least a minute; honour `Retry-After`.
    public static let quotaExceeded = FCMErrorCode(rawValue: "QUOTA_EXCEEDED")
    /// FCM is overloaded. Retry with back-off; honour `Retry-After`.
    public static let unavailable = FCMErrorCode(rawValue: "UNAVAILABLE")
    /// FCM failed internally. Retry with back-off.
    public static let `internal` = FCMErrorCode(rawValue: "INTERNAL")
    /// The APNs or Web Push credentials uploaded to Firebase are invalid or missing. Fix them in the
    /// Firebase console.
    public static let thirdPartyAuthError = FCMErrorCode(rawValue: "THIRD_PARTY_AUTH_ERROR")

    /// The hub could not get an access token for the service account (revoked key, wrong clock, …).
    public static let authenticationFailed = FCMErrorCode(rawValue: "HUB_AUTHENTICATION_FAILED")
    /// The message exceeds ``FCMMessage/payloadLimit``; nothing was sent.
    public static let payloadTooLarge = FCMErrorCode(rawValue: "HUB_PAYLOAD_TOO_LARGE")
    /// No answer: connection, TLS or timeout failure. Retry.
    public static let networkFailure = FCMErrorCode(rawValue: "HUB_NETWORK_FAILURE")

    /// The codes FCM documents and the hub's own.
    public static let known: [FCMErrorCode] = [
        .unspecifiedError, .invalidArgument, .unregistered, .senderIDMismatch, .quotaExceeded, .unavailable,
        .internal, .thirdPartyAuthError, .authenticationFailed, .payloadTooLarge, .networkFailure,
    ]

    /// Maps an `errorCode` string from an error body; legacy `APNS_AUTH_ERROR` becomes
    /// ``thirdPartyAuthError``, a missing code ``unspecifiedError``, and any other string is kept.
    public init(parsing text: String?) {
        switch text {
        case nil, "": self = .unspecifiedError
        case "APNS_AUTH_ERROR": self = .thirdPartyAuthError
        case let text?: self.init(rawValue: text)
        }
    }

    /// A code that may come from a newer FCM than this hub knows.
    public static func unknown(_ text: String) -> FCMErrorCode { FCMErrorCode(rawValue: text) }

    /// Whether this is one of ``known``.
    public var isKnown: Bool { Self.known.contains(self) }

    public var description: String { rawValue }
}

/// Why an FCM request failed: the code to act on, what Google said, and when to try again.
public struct FCMError: Error, Sendable, CustomStringConvertible {
    /// Whether this is `INVALID_ARGUMENT` about the registration token itself ("The registration
    /// token is not a valid FCM registration token"): the token never was one, or belongs to
    /// another app, and PROVIDERS.md §2.4 says to drop it. Other `INVALID_ARGUMENT`s name a field
    /// of the message: the message is wrong, not the device.
    public var namesInvalidToken: Bool {
        guard code == .invalidArgument else { return false }
        let text = message.lowercased()
        return text.contains("registration token")
            && (text.contains("not a valid") || text.contains("invalid registration"))
    }

    /// The `FcmError.errorCode` of the answer, or a hub code (``FCMErrorCode/networkFailure``, …).
    public var code: FCMErrorCode
    /// The HTTP status of FCM's or the token endpoint's answer, if one came.
    public var httpStatus: Int?
    /// Google's canonical status (`NOT_FOUND`, `RESOURCE_EXHAUSTED`, …) or the OAuth `error`.
    public var status: String?
    /// What went wrong and, where it helps, what to do about it.
    public var message: String
    /// The provider's `Retry-After`, when it sent one.
    public var retryAfter: Duration?
    /// The lower-level error (network, TLS, JSON), if any.
    public var underlying: (any Error & Sendable)?

    public init(
        code: FCMErrorCode, httpStatus: Int? = nil, status: String? = nil, message: String,
        retryAfter: Duration? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.httpStatus = httpStatus
        self.status = status
        self.message = message
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// For example `404 NOT_FOUND UNREGISTERED: Requested entity was not found.`; never contains tokens or keys.
    public var description: String {
        var parts: [String] = []
        if let httpStatus { parts.append(String(httpStatus)) }
        if let status, status != code.rawValue { parts.append(status) }
        if code != .unspecifiedError || parts.isEmpty { parts.append(code.rawValue) }
        var text = parts.joined(separator: " ") + ": " + message
        if let retryAfter { text += " (Retry-After \(retryAfter.components.seconds) s)" }
        return text
    }
}

/// The `google.rpc.Status` error body of Google APIs.
struct GoogleErrorBody: Decodable {
    struct Status: Decodable {
        var code: Int?
        var message: String?
        var status: String?
        var details: [Detail]?
    }

    struct Detail: Decodable {
        var type: String?
        var errorCode: String?

        private enum CodingKeys: String, CodingKey {
            case type = "@type"
            case errorCode
        }
    }

    var error: Status

    /// The `errorCode` of the first `FcmError` detail.
    var fcmErrorCode: String? {
        error.details?.first { $0.type?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }?.errorCode
    }
}
