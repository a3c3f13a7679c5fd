import Foundation

/// A hub shoulder tap recognised in a push payload: a content-free "sync your feed".
///
/// The hub's transports put a `hub` key at the top level of what they send, and name the app and
/// the feed version the tap announces (`v`):
///
/// - **APNs** background push: `{"aps": {"content-available": 1}, "hub": {"app": "…", "v": 42}}`,
///   the `userInfo` of `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`;
/// - **FCM** data message: `{"hub": "tap", "app": "…", "v": "42"}` in `RemoteMessage.data` (FCM
///   data values are strings; visible deliveries say `"visible"` or `"fallback"`);
/// - **WNS** raw notification: the body `{"hub": "tap", "app": "…", "v": "42"}`; decode it with
///   `JSONSerialization` and pass the dictionary.
///
/// Any dictionary with a `hub` key is a tap; the rest is a hint. When the tap names an app other
/// than the client's, it is not for this client. Nothing else in it is trusted or needed: the
/// client syncs the feed to learn what changed.
public struct ShoulderTap: Sendable, Hashable {
    /// The app the tap names (`app`, beside `hub` or inside it), if it names one.
    public var app: String?
    /// The feed version the tap announces (`v`), if it says.
    public var changeVersion: Int64?

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
        switch fields["v"] {
        case let number as Int: changeVersion = Int64(number)
        case let number as Int64: changeVersion = number
        case let text as String: changeVersion = Int64(text)
        default: changeVersion = nil
        }
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

    /// Syncs the feed for a recognised tap; `nil` when it names another app.
    public func handle(_ tap: ShoulderTap) async throws -> [UserNotification]? {
        if let named = tap.app, named != app { return nil }
        return try await feed.syncNow().map { UserNotification($0, client: self) }
    }
}
