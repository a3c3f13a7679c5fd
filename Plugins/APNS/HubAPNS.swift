public import HubCore
public import Logging

// HubAPNS: the Apple Push Notification service transport of NotificationHub.
//
// - `APNSTransport`: the `Transport` the hub runs (`send(_ OutboundDelivery)`), and a lower-level
//   `send(_ APNSRequest, credentials:)` for embedders who build their own pushes.
// - `APNSPayload`, `APNSAlertPayload`, `APNSBackgroundPayload`, `APNSVoIPPayload`, `APNSAlert`,
//   `APNSSound`: typed payloads; a field a push type forbids does not exist on its payload.
// - `APNSPushType`, `APNSPriority`, `APNSExpiration`, `APNSCollapseID`: header values.
// - `APNSError`: every failure, with Apple's reasons as `APNSError.Reason`.
//
// Requests go through HubHTTP2's `HTTP2Client` (HTTP/2 over TLS, one client per credentials with
// connections to each environment's server); provider tokens are ES256 JWTs signed with JWT Kit.

extension Transport where Self == APNSTransport {
    /// The APNs transport, for generic contexts: `let apns: some Transport = .apns(logger: logger)`.
    public static func apns(
        configuration: APNSTransport.Configuration = APNSTransport.Configuration(), logger: Logger
    ) -> APNSTransport {
        APNSTransport(configuration: configuration, logger: logger)
    }
}
