@_exported public import HubWire

// The wire vocabulary is defined once in HubWire, which HubClient shares, so what the hub writes
// and what its clients read cannot drift apart. HubWire is re-exported, and each type is also
// named here by a typealias: DocC does not document a re-exported module's types, and HubCore's
// API reads the same as before.

/// Whether the user has read a notification (unread, read).
public typealias ReadState = HubWire.ReadState
/// What the user did with a notification's visual on any device (noInteraction, activated,
/// dismissed, snoozed).
public typealias UserActionState = HubWire.UserActionState
/// The server-kept life-cycle state of a notification (active, expired, deleted, scheduled).
public typealias NotificationStatus = HubWire.NotificationStatus
/// A notification's priority (none, low, high).
public typealias NotificationPriority = HubWire.NotificationPriority
/// A device platform a cross-device app can run on (ios, android, windows, web).
public typealias Platform = HubWire.Platform
/// Whether an endpoint still receives taps (active, inactive).
public typealias EndpointState = HubWire.EndpointState
/// What the device shows: a title and a body, plus localisation keys, badge and tile flag.
public typealias VisualContent = HubWire.VisualContent
/// The content of a notification: an opaque string for the app, a visual, or both.
public typealias NotificationPayload = HubWire.NotificationPayload
/// Which of the user's platforms a notification targets; empty means all.
public typealias TargetPolicy = HubWire.TargetPolicy
/// Reads a `Retry-After` header (delay-seconds or an HTTP date) as a delay.
public typealias RetryAfter = HubWire.RetryAfter
