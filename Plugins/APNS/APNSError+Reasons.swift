/// What the transport does about one APNs reason (PROVIDERS.md §1.5 and §6).
enum APNSResponseAction: Sendable, Hashable {
    /// The token is dead: deactivate the endpoint, never retry to it.
    case dropToken
    /// The provider token expired: sign a new one and retry once within the same send.
    case renewToken
    /// The connection is unusable: open a new one and retry once within the same send.
    case reconnect
    /// Transient: let the dispatcher retry with back-off, honouring `Retry-After`.
    case retry
    /// The provider token changed too often: stop re-signing, leave the connection, retry later.
    case backOffTokenUpdates
    /// The credentials or hub configuration are wrong for every delivery of these credentials:
    /// suspend (park the delivery until the hub restarts with the configuration fixed), log once
    /// per credentials with what to fix.
    case fixConfiguration
    /// The request the transport built is wrong (a bug or an unusual notification): reject.
    case fixRequest
}

extension APNSError.Reason {
    /// What to do about this reason; unknown reasons are judged by their status.
    func action(status: Int) -> APNSResponseAction {
        switch self {
        case .unregistered, .expiredToken, .badDeviceToken, .deviceTokenNotForTopic: return .dropToken
        case .expiredProviderToken: return .renewToken
        case .unrelatedKeyIdInToken, .idleTimeout, .shutdown: return .reconnect
        case .tooManyRequests, .internalServerError, .serviceUnavailable: return .retry
        case .tooManyProviderTokenUpdates: return .backOffTokenUpdates
        case .badTopic, .topicDisallowed, .missingTopic, .invalidProviderToken, .missingProviderToken,
            .badCertificate, .badCertificateEnvironment, .badEnvironmentKeyIdInToken, .forbidden:
            return .fixConfiguration
        case .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .duplicateHeaders, .invalidPushType,
            .missingDeviceToken, .payloadEmpty, .payloadTooLarge, .badPath, .methodNotAllowed:
            return .fixRequest
        default:
            if status == 410 { return .dropToken }
            if status == 429 || status >= 500 { return .retry }
            // An unknown 403 refuses the credentials; an unknown 400 the request.
            return status == 403 ? .fixConfiguration : .fixRequest
        }
    }

    /// What an operator should do, for the one log line a configuration error gets.
    var advice: String {
        switch self {
        case .badTopic:
            return "the apns-topic is malformed: check the app's platforms.ios.appIds are bundle IDs"
        case .topicDisallowed:
            return
                "these credentials may not push to this bundle ID: use the key or certificate of the team that owns it"
        case .missingTopic:
            return "APNs needs apns-topic: with a certificate for several topics the bundle ID must be sent"
        case .invalidProviderToken:
            return "the provider token did not verify: check keyId, teamId and that privateKey is that key's .p8"
        case .missingProviderToken:
            return "no provider token and no client certificate reached APNs: check credentials.apns"
        case .badCertificate:
            return "APNs refused the client certificate: export a current APNs certificate as .p12 again"
        case .badCertificateEnvironment:
            return "the certificate is for the other environment: use a Sandbox & Production certificate"
        case .badEnvironmentKeyIdInToken:
            return "the key is restricted to the other environment: use a key for this environment or a team key"
        case .forbidden:
            return "APNs forbids this action for these credentials; Apple says not to retry"
        case .expiredProviderToken:
            return "APNs says even a newly signed provider token is older than an hour: check this host's clock (NTP)"
        case .tooManyProviderTokenUpdates:
            return "the provider token changed more often than every 20 minutes on one connection"
        case .badDeviceToken:
            return "the token is malformed or belongs to the other APNs environment"
        case .deviceTokenNotForTopic:
            return "the token belongs to another bundle ID than the endpoint's app ID"
        case .payloadTooLarge:
            return "the payload is over the APNs limit (4096 bytes, 5120 for VoIP)"
        case .payloadEmpty:
            return "the payload was empty"
        default:
            return isKnown
                ? "the request was refused; this is likely a bug in the APNs transport, please report it"
                : "APNs gave a reason this hub does not know; see Apple's documentation"
        }
    }
}
