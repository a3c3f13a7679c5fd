import HubCore

extension FCMTransport {
    /// What the dispatcher should do after `error` (PROVIDERS.md §2.4 and §6).
    ///
    /// The code of the `FcmError` detail decides first; the HTTP status decides for answers without one.
    /// Configuration faults — `THIRD_PARTY_AUTH_ERROR` (the APNs or Web Push credentials in the
    /// Firebase project), a service account Google refuses (token endpoint, or 401 again with a
    /// fresh access token) and a 403 without `SENDER_ID_MISMATCH` (no permission, API disabled) —
    /// are ``HubCore/DeliveryOutcome/suspended(reason:)``: parked until the hub restarts with the
    /// configuration fixed. `SENDER_ID_MISMATCH` and an `INVALID_ARGUMENT` that says the
    /// registration token is not valid drop the token, as PROVIDERS.md says; other
    /// `INVALID_ARGUMENT`s reject the delivery (the message is wrong, not the device).
    /// The reason keeps the HTTP status, Google's status, the code and message, so it is stored with
    /// the delivery.
    func outcome(for error: FCMError, app: CrossDeviceApp) -> DeliveryOutcome {
        let reason = error.description
        switch error.code {
        case .unregistered, .senderIDMismatch:
            return .endpointGone(since: nil, reason: reason)
        case .invalidArgument where error.namesInvalidToken:
            return .endpointGone(since: nil, reason: reason)
        case .invalidArgument, .payloadTooLarge:
            return .rejected(reason: reason)
        case .quotaExceeded:
            return .retry(after: max(error.retryAfter ?? .zero, configuration.minimumQuotaRetry), reason: reason)
        case .unavailable, .internal, .networkFailure:
            return .retry(after: error.retryAfter, reason: reason)
        case .thirdPartyAuthError:
            reportOnce(
                error, app: app,
                advice: "the APNs or Web Push credentials uploaded to this Firebase project are invalid or missing; "
                    + "fix them in the Firebase console (Project settings → Cloud Messaging)")
            return .suspended(reason: reason)
        case .authenticationFailed:
            reportOnce(error, app: app, advice: "check credentials.fcm.serviceAccount and the server clock")
            return .suspended(reason: reason)
        default:
            return outcome(forStatus: error, app: app)
        }
    }

    /// The outcome of an answer without a known `FcmError` code, by HTTP status.
    private func outcome(forStatus error: FCMError, app: CrossDeviceApp) -> DeliveryOutcome {
        let reason = error.description
        switch error.httpStatus ?? 0 {
        case 401:
            // Refused twice within one send, the second time with a fresh access token: the
            // service account's credentials do not work for FCM.
            reportOnce(
                error, app: app,
                advice: "FCM refused a freshly issued access token: check that credentials.fcm.serviceAccount "
                    + "is a current key of a service account of project \(app.credentials.fcm?.projectID ?? "?")")
            return .suspended(reason: reason)
        case 403:
            reportOnce(
                error, app: app,
                advice: "the service account may not send for project \(app.credentials.fcm?.projectID ?? "?"): "
                    + "grant it the Firebase Cloud Messaging API Admin role and enable the FCM API")
            return .suspended(reason: reason)
        case 429:
            return .retry(after: max(error.retryAfter ?? .zero, configuration.minimumQuotaRetry), reason: reason)
        case 500...599:
            return .retry(after: error.retryAfter, reason: reason)
        default:
            return .rejected(reason: reason)
        }
    }
}
