import Foundation

/// A hub shoulder tap recognised in a push payload: a content-free "sync your feed".
///
/// The hub's transports put a `hub` key at the top level of what they send, and name the app and
/// the feed version the tap announces (`v`):
///
/// - **APNs** background push: `{"aps": {"content-available": 1}, "hub": {"app": "…", "v": 42}}`,
///   the `userInfo` of `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`; for an
///   app that shows the hub's badge, `aps` also holds `"badge": 3`;
/// - **FCM** and **Web Push** of such an app carry `"badge": "3"` beside `hub`;
/// - **FCM** data message: `{"hub": "tap", "app": "…", "v": "42"}` in `RemoteMessage.data` (FCM
///   data values are strings; visible deliveries say `"visible"` or `"fallback"`);
/// - **WNS** raw notification: the body `{"hub": "tap", "app": "…", "v": "42"}`; decode it with
///   `JSONSerialization` and pass the dictionary.
///
/// Any dictionary with a `hub` key is a tap; the rest is a hint. When the tap names an app other
/// than the client's, it is not for this client. Nothing else in it is trusted or needed: the
/// client syncs the feed to learn what changed.
///
/// A tap announcing version 0 (``isErasure``) says the app operator erased the user's data on
/// the hub (`DELETE /v1/apps/{app}/users/{userId}`): ``HubClient/handle(_:)`` then forgets the
/// client's registration and feed position instead of syncing, and the app should drop the
/// notifications it keeps or shows for the user.
public struct ShoulderTap: Sendable, Hashable {
    /// The app the tap names (`app`, beside `hub` or inside it), if it names one.
    public var app: String?
    /// The feed version the tap announces (`v`), if it says.
    public var changeVersion: Int64?
    /// The app icon badge the hub counted for this device (the user's unread, undismissed, active
    /// notifications its platform sees), when the app shows the hub's count (hub.yaml
    /// `delivery.badge: unread`): APNs `aps.badge`, or the `badge` field of an FCM data message or a
    /// Web Push payload. ``HubClient/handle(_:)`` hands it to ``HubClient/Configuration/applyBadge``.
    public var badge: Int?

    /// The version an erasure tap announces: no change of a feed has it (versions start at 1).
    public static let erasureVersion: Int64 = 0

    /// Whether the tap says the user's data was erased on the hub: drop every local copy.
    public var isErasure: Bool { changeVersion == Self.erasureVersion }

    /// Recognises a tap in a push payload; `nil` when the payload is not the hub's.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let hint = userInfo["hub"] else { return nil }
        var fields: [String: Any] = [:]
        for case (let key as String, let value) in userInfo where key != "hub" { fields[key] = value }
        if let dictionary = hint as? [AnyHashable: Any] {
            for case (let key as String, let value) in dictionary { fields[key] = value }
        } else if let text = hint as? String, text.hasPrefix("{"),
            let dictionary = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        {
            fields.merge(dictionary) { _, inner in inner }
        }
        app = (fields["app"] ?? fields["appId"]) as? String
        let aps = userInfo["aps"] as? [AnyHashable: Any]
        badge = Self.count(fields["badge"] ?? aps?["badge"])
        switch fields["v"] {
        case let number as Int: changeVersion = Int64(number)
        case let number as Int64: changeVersion = number
        case let text as String: changeVersion = Int64(text)
        default: changeVersion = nil
        }
    }

    /// A badge count as a payload carries it: a number (APNs) or its decimal text (FCM, Web Push).
    private static func count(_ value: Any?) -> Int? {
        let count: Int? =
            switch value {
            case let number as Int: number
            case let number as Int64: Int(exactly: number)
            case let number as NSNumber: number.intValue
            case let text as String: Int(text)
            default: nil
            }
        return count.map { max(0, $0) }
    }
}

extension HubClient {
    #if compiler(>=6.2)
        /// Handles a push payload: when it is a hub shoulder tap for this client's app, syncs the
        /// feed and hands the changes to every iteration of ``UserNotificationReader/changes``.
        ///
        /// Call it from the app's push callback and finish the callback with the result:
        ///
        /// ```swift
        /// func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any])
        ///     async -> UIBackgroundFetchResult {
        ///     do {
        ///         guard let changes = try await client.handleShoulderTap(userInfo) else { return .noData }
        ///         return changes.isEmpty ? .noData : .newData
        ///     } catch {
        ///         return .failed
        ///     }
        /// }
        /// ```
        ///
        /// It runs on the caller's actor until it syncs, so a main-actor `userInfo` need not be
        /// `Sendable`. See ``ShoulderTap`` for the payloads it recognises.
        ///
        /// - Returns: `nil` when the payload is not a tap for this app; otherwise the changes since the
        ///   last sync (possibly none: taps coalesce, and another sync may have fetched them already).
        /// - Throws: ``HubClientError`` when the sync failed, or `CancellationError`.
        nonisolated(nonsending)
            public func handleShoulderTap(_ userInfo: [AnyHashable: Any]) async throws -> [UserNotification]?
        {
            guard let tap = ShoulderTap(userInfo: userInfo) else { return nil }
            return try await handle(tap)
        }
    #else
        /// Handles a push payload; see the Swift 6.2 declaration. Call it with a `Sendable` copy of
        /// the payload when the caller is on an actor.
        public func handleShoulderTap(_ userInfo: [AnyHashable: Any]) async throws -> [UserNotification]? {
            guard let tap = ShoulderTap(userInfo: userInfo) else { return nil }
            return try await handle(tap)
        }
    #endif

    /// Syncs the feed for a recognised tap; `nil` when it names another app. An erasure tap
    /// (``ShoulderTap/isErasure``) syncs nothing: the client forgets its registration and feed
    /// position (``resetLocalState()``, so ``registrationState`` turns `notRegistered`) and returns no
    /// changes; the app drops its own copies of the user's notifications.
    ///
    /// A tap that carries the hub's badge count (``ShoulderTap/badge``) is handed to
    /// ``Configuration/applyBadge`` first, so the icon shows the count even when the sync fails.
    public func handle(_ tap: ShoulderTap) async throws -> [UserNotification]? {
        if let named = tap.app, named != app { return nil }
        if tap.isErasure {
            try await resetLocalState()
            return []
        }
        if let badge = tap.badge, let apply = configuration.applyBadge { await apply(badge) }
        return try await feed.syncNow().map { UserNotification($0, client: self) }
    }
}
