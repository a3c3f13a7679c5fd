import HubCore
import HubTransportKit

import struct Foundation.Date

/// Turns a hub delivery into an APNs request.
///
/// | Delivery | Push type | Priority | Expiration | Payload |
/// |---|---|---|---|---|
/// | shoulder tap | background | 5 | `0`, or now + ``APNSTransport/Configuration/shoulderTapLifetime`` | `{"aps":{"content-available":1},"hub":{"app","v"}}` |
/// | shoulder tap of an app with the hub's badge (`delivery.badge: unread`) | alert | 5 | as a shoulder tap | `{"aps":{"badge":N,"content-available":1},"hub":{"app","v"}}`: no alert or sound, the badge changes silently and the app is woken to sync |
/// | visible, fallback | alert | 10 (5 for `low` priority) | the notification's `expirationDateTime`, at most now + 30 days | title and body from `visualContent` (trimmed to fit 4096 bytes, body first, by `VisibleTextFit`), `title-loc-key`/`title-loc-args` and `loc-key`/`loc-args` from its `titleLocKey`/`titleLocArgs` and `bodyLocKey`/`bodyLocArgs`, `badge` = the hub's count when the app shows it, else the notification's `badge`, `thread-id` = `groupName`, `hub` = `{app, v, id}` |
///
/// Alert pushes play the default sound unless the notification's priority is `low`, and collapse by `appNotificationId` (republishing replaces the shown alert), hashed to
/// fit 64 bytes when longer. A visible delivery whose notification has no `visualContent` is sent
/// as a background push: the app syncs and renders the raw content itself.
///
/// Why a badge update is not a `background` push: Apple's `apns-push-type` documentation gives
/// `alert` for "notifications that trigger a user interaction—for example, an alert, badge, or
/// sound", and a background push's `aps` holds only `content-available` (PROVIDERS.md §1.3).
struct APNSDeliveryRenderer {
    let configuration: APNSTransport.Configuration

    func request(for outbound: OutboundDelivery) throws(APNSError) -> APNSRequest {
        let endpoint = outbound.endpoint
        let token = endpoint.token ?? ""
        if let problem = APNSRequest.deviceTokenProblem(token) {
            throw APNSError(.invalidDeviceToken, "400 BadDeviceToken: \(problem)")
        }
        let environment = endpoint.apnsEnvironment ?? outbound.app.credentials.apns?.environment ?? .production
        let delivery = outbound.delivery
        let hubKeys: [String: APNSJSON] = ["app": .string(outbound.app.id), "v": .integer(Int(delivery.changeVersion))]

        guard let (notification, visual) = outbound.shown else {
            if outbound.kind != .shoulderTap && outbound.notification == nil {
                throw APNSError(.invalidPayload, "a \(outbound.kind) delivery came without its notification")
            }
            let lifetime = configuration.shoulderTapLifetime
            let expiration: APNSExpiration =
                lifetime <= .zero ? .immediately : .at(configuration.now().addingTimeInterval(lifetime.seconds))
            if let badge = outbound.badge {
                // A badge is user-visible, so Apple's rule makes this an alert push: one showing
                // nothing but the badge, at priority 5, still waking the app to sync.
                let payload = APNSAlertPayload(
                    alert: APNSAlert(), badge: badge, contentAvailable: true, custom: ["hub": .object(hubKeys)])
                return APNSRequest(
                    deviceToken: token, environment: environment, bundleID: endpoint.platformAppId,
                    payload: .alert(payload, priority: .considerate), expiration: expiration)
            }
            return APNSRequest(
                deviceToken: token, environment: environment, bundleID: endpoint.platformAppId,
                payload: .background(APNSBackgroundPayload(custom: ["hub": .object(hubKeys)])),
                expiration: expiration)
        }

        var custom = hubKeys
        custom["id"] = .string(notification.id)
        let payload = APNSAlertPayload(
            alert: APNSAlert(
                title: visual.title, body: visual.body,
                titleLocalization: visual.titleLocKey.map {
                    APNSLocalizedText(key: $0, arguments: visual.titleLocArgs ?? [])
                },
                bodyLocalization: visual.bodyLocKey.map {
                    APNSLocalizedText(key: $0, arguments: visual.bodyLocArgs ?? [])
                }),
            badge: outbound.shownBadge, sound: notification.priority == .low ? nil : .default,
            threadID: notification.groupName, custom: ["hub": .object(custom)])
        return APNSRequest(
            deviceToken: token, environment: environment, bundleID: endpoint.platformAppId,
            payload: .alert(payload, priority: notification.priority == .low ? .considerate : .immediate),
            expiration: Self.expiration(of: notification.expirationDateTime, now: configuration.now()),
            collapseID: APNSCollapseID(notification.appNotificationId))
    }

    /// How long APNs stores an alert for an offline device: until the notification expires, at most
    /// 30 days (what APNs keeps; the emulator refuses later dates with `BadExpirationDate`). A
    /// notification already expired is tried once and not stored (`0`).
    static func expiration(of expiry: Date, now: Date) -> APNSExpiration {
        guard expiry > now else { return .immediately }
        return .at(min(expiry, now.addingTimeInterval(APNSExpiration.maximumStorage)))
    }
}
