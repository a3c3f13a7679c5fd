public import Foundation

/// A notification an app server published for the signed-in user, with the state the hub keeps
/// for it across the user's devices (Graph's `UserNotification`).
///
/// Change ``readState`` or ``userActionState`` and call ``save()`` to record the change on the
/// hub; the user's other devices see it in their feed. That is universal dismiss:
///
/// ```swift
/// for try await notification in reader.changes {
///     if notification.status != .active || notification.userActionState == .dismissed {
///         removeVisual(of: notification.id)       // dismissed elsewhere, expired or deleted
///     } else {
///         show(notification)
///     }
/// }
///
/// // Later, when the user swipes the visual away on this device:
/// notification.userActionState = .dismissed
/// try await notification.save()
/// ```
///
/// A value type: a copy changed and saved does not update other copies; the feed reports the
/// change to every reader.
public struct UserNotification: Sendable, Identifiable {
    /// The hub's ID of the notification, stable across republishes.
    public var id: String { resource.id }
    /// The publisher's key; republishing it updates this notification.
    public var appNotificationId: String { resource.appNotificationId }
    public var groupName: String? { resource.groupName }
    public var priority: NotificationPriority { resource.priority }
    /// The app's opaque content, if the publisher sent some.
    public var rawContent: String? { resource.payload.rawContent }
    /// What to show, if the publisher sent a visual.
    public var visualContent: VisualContent? { resource.payload.visualContent }
    /// The platforms the publisher targeted; empty means all.
    public var targetPlatforms: [Platform] { resource.targetPolicy.platformTypes }
    /// Seconds the visual should stay on screen, if the publisher said.
    public var displayTimeToLive: Int? { resource.displayTimeToLive }
    public var expirationDateTime: Date { resource.expirationDateTime }
    public var createdDateTime: Date { resource.createdDateTime }
    public var lastModifiedDateTime: Date { resource.lastModifiedDateTime }
    /// `active`, or `expired` / `deleted` for tombstones the feed reports once.
    public var status: NotificationStatus { resource.status }
    /// The feed position of this notification's latest change; newer changes have larger ones.
    public var changeVersion: Int64 { resource.changeVersion }

    /// Whether the user read it. Setting it marks the change for the next ``save()``.
    public var readState: ReadState {
        get { resource.readState }
        set {
            resource.readState = newValue
            edits.readState = newValue
        }
    }

    /// What the user did with it. Set `UserActionState.dismissed` and ``save()`` for universal
    /// dismiss.
    public var userActionState: UserActionState {
        get { resource.userActionState }
        set {
            resource.userActionState = newValue
            edits.userActionState = newValue
        }
    }

    /// Whether ``readState`` or ``userActionState`` changed since it was read or last saved.
    public var hasUnsavedChanges: Bool { edits.readState != nil || edits.userActionState != nil }

    var resource: NotificationResource
    private var edits = StateChangeBody()
    private let client: HubClient?

    init(_ resource: NotificationResource, client: HubClient?) {
        self.resource = resource
        self.client = client
    }

    /// Records the changed ``readState`` and ``userActionState`` on the hub
    /// (`PATCH /v1/apps/{app}/me/notifications/{id}`, naming this device's endpoint in
    /// `X-Hub-Endpoint` so the hub does not tap it back), then takes the hub's answer: the saved
    /// state and its new ``changeVersion``. When the app shows the hub's badge, the answer's count
    /// for this device goes to ``HubClient/Configuration/applyBadge``.
    ///
    /// Only the properties set since the last read or save are sent, so a save never undoes a
    /// change another device made to the other property. Without changes it does nothing.
    ///
    /// - Throws: ``HubClientError`` (``HubClientError/Code/notFound`` when the notification is
    ///   gone), or `CancellationError`.
    public mutating func save() async throws {
        guard hasUnsavedChanges else { return }
        guard let client else {
            throw HubClientError(
                .invalidRequest, "This notification was not read through a HubClient; it cannot be saved.")
        }
        resource = try await client.updateState(of: id, edits)
        edits = StateChangeBody()
    }
}

extension UserNotification: Hashable {
    /// Notifications are equal when their content and state are (the client is not compared).
    public static func == (lhs: UserNotification, rhs: UserNotification) -> Bool {
        lhs.resource == rhs.resource
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(resource)
    }
}

extension UserNotification: CustomStringConvertible {
    public var description: String {
        "\(appNotificationId) [\(status), \(readState), \(userActionState), v\(changeVersion)]"
            + (visualContent.map { ": \($0.title)" } ?? "")
    }
}

extension HubClient {
    /// `PATCH …/me/notifications/{id}` with this device's endpoint in `X-Hub-Endpoint`.
    func updateState(of id: String, _ change: StateChangeBody) async throws -> NotificationResource {
        var request = HubRequest(method: "PATCH", path: ["me", "notifications", id])
        request.body = try HubJSON.encoder.encode(change)
        request.headers["X-Hub-Endpoint"] = endpointID
        let (resource, response) = try await requester.sendReturningResponse(request, as: NotificationResource.self)
        // This device is not tapped for its own change: the hub answers its badge instead.
        if let apply = configuration.applyBadge,
            let badge = (response.value(forHTTPHeaderField: "X-Hub-Badge")).flatMap(Int.init)
        {
            await apply(max(0, badge))
        }
        return resource
    }
}
