import Foundation
import HubEmulatorKit

extension FCMEmulator {
    /// Accepted spellings of message fields (proto JSON accepts snake_case and lowerCamelCase).
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token", "topic",
        "condition",
    ]
    static let androidFields: Set<String> = [
        "collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name", "restrictedPackageName", "data",
        "notification", "fcm_options", "fcmOptions", "direct_boot_ok", "directBootOk",
    ]
    /// `AndroidNotification`'s fields (PROVIDERS.md §2.3), in both spellings.
    static let androidNotificationFields: Set<String> = Set(
        androidNotificationTexts + [
            "title_loc_args", "titleLocArgs", "body_loc_args", "bodyLocArgs", "notification_count", "notificationCount",
            "sticky", "local_only", "localOnly", "default_sound", "defaultSound", "default_vibrate_timings",
            "defaultVibrateTimings", "default_light_settings", "defaultLightSettings", "vibrate_timings",
            "vibrateTimings", "visibility", "light_settings", "lightSettings", "proxy", "event_time", "eventTime",
        ])
    /// The `AndroidNotification` fields that hold text.
    static let androidNotificationTexts = [
        "title", "body", "icon", "color", "sound", "tag", "click_action", "clickAction", "title_loc_key",
        "titleLocKey", "body_loc_key", "bodyLocKey", "channel_id", "channelId", "ticker", "image",
        "notification_priority", "notificationPriority",
    ]
    /// The FCM payload limit, counted over `data` keys and values and the notification's title and body.
    static let payloadLimit = 4096
    /// The longest `android.ttl`: four weeks.
    static let maximumTTL = 2_419_200.0

    /// `POST /v1/projects/{project}/messages:send`.
    func send(_ request: EmulatorRequest) -> EmulatorResponse {
        let project = String(request.path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count))
        guard request.method == "POST" else { return Self.googleError(405, "INVALID_ARGUMENT", "Use POST.") }
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            authorization.count > "Bearer ".count
        else {
            return Self.googleError(
                401, "UNAUTHENTICATED",
                "Request is missing required authentication credential. Expected OAuth 2 access token.")
        }
        let token = String(authorization.dropFirst("Bearer ".count))
        let current = now()
        if let denial = admit(token: token, project: project, at: current) { return denial }
        guard request.header("content-type")?.lowercased().hasPrefix("application/json") == true else {
            return Self.invalid("Invalid JSON payload received. Content-Type must be application/json.")
        }
        let parsed: ParsedMessage
        switch Self.parse(request.body) {
        case .failure(let message): return Self.invalid(message.description)
        case .success(let message): parsed = message
        }
        if let target = parsed.token, let failure = state.withLock({ $0.tokenFailures[target] }) {
            return Self.response(for: failure)
        }
        let received = ReceivedMessage(
            project: project, token: parsed.token, topic: parsed.topic, data: parsed.data,
            notificationTitle: parsed.notification["title"], notificationBody: parsed.notification["body"],
            androidPriority: parsed.android["priority"], androidTTL: parsed.android["ttl"],
            collapseKey: parsed.android["collapse_key"] ?? parsed.android["collapseKey"],
            restrictedPackageName: parsed.android["restricted_package_name"]
                ?? parsed.android["restrictedPackageName"],
            androidTag: parsed.androidTag, validateOnly: parsed.validateOnly, httpVersion: request.version,
            json: String(decoding: request.body, as: UTF8.self))
        let id = state.withLock { state -> String in
            if state.recordsMessages { state.messages.append(received) }
            state.acceptedCount += 1
            return parsed.validateOnly ? "fake_message_id" : "0:\(state.acceptedCount)%emulator"
        }
        return .json(200, #"{"name":"projects/\#(project)/messages/\#(id)"}"#)
    }

    /// Checks the bearer token, its project, a scripted 503 burst and the quota window.
    /// - Returns: the error response, or `nil` when the request may proceed.
    private func admit(token: String, project: String, at current: Date) -> EmulatorResponse? {
        state.withLock { state in
            guard let grant = state.accessTokens[token], grant.expires > current else {
                return Self.googleError(
                    401, "UNAUTHENTICATED",
                    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                        + "other valid authentication credential.")
            }
            guard grant.project == project else {
                return Self.googleError(
                    403, "PERMISSION_DENIED",
                    "Permission 'cloudmessaging.messages.create' denied on resource "
                        + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
            }
            if state.unavailable.remaining > 0 {
                state.unavailable.remaining -= 1
                let retry = state.unavailable.retryAfter.map { [("retry-after", String($0))] } ?? []
                return Self.googleError(
                    503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE",
                    headers: retry)
            }
            guard let limit = state.quotaPerMinute else { return nil }
            var window = state.quotaWindows[project] ?? (current, 0)
            if current.timeIntervalSince(window.start) >= 60 { window = (current, 0) }
            guard window.count < limit else {
                let wait = max(1, Int((60 - current.timeIntervalSince(window.start)).rounded(.up)))
                return Self.googleError(
                    429, "RESOURCE_EXHAUSTED",
                    "Quota exceeded for quota metric 'Send requests' of service 'fcm.googleapis.com' for consumer "
                        + "'project_number:\(project)'.",
                    errorCode: "QUOTA_EXCEEDED", headers: [("retry-after", String(wait))])
            }
            window.count += 1
            state.quotaWindows[project] = window
            return nil
        }
    }

    static func response(for failure: TokenFailure) -> EmulatorResponse {
        switch failure {
        case .unregistered:
            googleError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
        case .senderIDMismatch:
            googleError(403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")
        case .thirdPartyAuthError:
            googleError(
                401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", errorCode: "THIRD_PARTY_AUTH_ERROR")
        case .internalError:
            googleError(500, "INTERNAL", "Internal error encountered.", errorCode: "INTERNAL")
        case .invalidField:
            invalid(
                "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), "
                    + "Field 'ttl', Illegal duration format; duration must end with 's'")
        default:
            invalid("The registration token is not a valid FCM registration token")
        }
    }

    /// 400 `INVALID_ARGUMENT` with an `FcmError` detail.
    static func invalid(_ message: String) -> EmulatorResponse {
        googleError(400, "INVALID_ARGUMENT", message, errorCode: "INVALID_ARGUMENT")
    }

    /// A `google.rpc.Status` error body, with an `FcmError` detail when `errorCode` is given.
    static func googleError(
        _ code: Int, _ status: String, _ message: String, errorCode: String? = nil, headers: [(String, String)] = []
    ) -> EmulatorResponse {
        let details =
            errorCode.map {
                #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"#
            } ?? ""
        return .json(
            code,
            #"{"error":{"code":\#(code),"message":\#(EmulatorText.jsonString(message)),"status":"\#(status)"\#(details)}}"#,
            headers: headers)
    }
}
