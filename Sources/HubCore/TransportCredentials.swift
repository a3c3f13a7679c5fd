/// One app's credentials for one transport, read from `credentials.<id>` by its ``TransportPlugin``.
///
/// A plugin defines its own type (a key and its IDs, a service account, …) and, by convention, a
/// property on ``PushCredentials`` to reach it:
///
/// ```swift
/// public struct WebhookCredentials: TransportCredentials {
///     public static let transport = TransportID("webhook")
///     public var secret: Secret
///     public var summary: String { "shared secret (\(secret.source))" }
/// }
/// extension PushCredentials {
///     public var webhook: WebhookCredentials? {
///         get { self[WebhookCredentials.self] }
///         set { self[WebhookCredentials.self] = newValue }
///     }
/// }
/// ```
public protocol TransportCredentials: Sendable, Hashable {
    /// The transport these credentials are for: the key under `credentials`.
    static var transport: TransportID { get }
    /// What kind of credentials these are, safe to print (never a secret): `token (.p8)`, ….
    var summary: String { get }
}

/// The push credentials of one cross-device app: at most one set per transport.
public struct PushCredentials: Sendable, Hashable {
    private var entries: [TransportID: Entry] = [:]

    public init() {}

    /// Credentials for several transports (the last of two for the same transport wins).
    public init(_ credentials: [any TransportCredentials]) {
        for credential in credentials { self[transport: Self.transport(of: credential)] = credential }
    }

    /// The credentials of `type`'s transport, when given and of that type.
    public subscript<C: TransportCredentials>(_ type: C.Type) -> C? {
        get { entries[C.transport]?.value as? C }
        set { entries[C.transport] = newValue.map { Entry(value: $0) } }
    }

    /// The credentials for `transport`, whatever their type.
    public subscript(transport transport: TransportID) -> (any TransportCredentials)? {
        get { entries[transport]?.value }
        set { entries[transport] = newValue.map { Entry(value: $0) } }
    }

    /// The transports that have credentials, sorted.
    public var transports: [TransportID] { entries.keys.sorted { $0.rawValue < $1.rawValue } }

    public var isEmpty: Bool { entries.isEmpty }

    private static func transport(of credentials: some TransportCredentials) -> TransportID {
        type(of: credentials).transport
    }

    /// Type-erased, with equality and hashing of the wrapped value.
    private struct Entry: Sendable, Hashable {
        let value: any TransportCredentials
        static func == (lhs: Entry, rhs: Entry) -> Bool { AnyHashable(lhs.value) == AnyHashable(rhs.value) }
        func hash(into hasher: inout Hasher) { AnyHashable(value).hash(into: &hasher) }
    }
}
