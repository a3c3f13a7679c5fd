public import Foundation

/// Who a broadcast is for.
public enum BroadcastAudience: Sendable, Hashable {
    /// Every user with at least one active endpoint or a feed (a notification, tombstones
    /// included) in the app when the expansion reaches them.
    case allUsers
    /// The users listed with the broadcast (stored with it; `count` distinct users).
    case users(count: Int)
    /// The users whose tags include any of `anyOf` (when not empty) and all of `allOf`.
    case tags(anyOf: [String], allOf: [String])

    /// How stores keep it: `allUsers`, `users` or `tags`, with the tag lists (empty otherwise).
    public var storedForm: (kind: String, anyOf: [String], allOf: [String]) {
        switch self {
        case .allUsers: ("allUsers", [], [])
        case .users: ("users", [], [])
        case .tags(let anyOf, let allOf): ("tags", anyOf, allOf)
        }
    }

    /// The most users a `users` audience lists.
    public static let maxUsers = 100_000
    /// The most tags of a tag expression's `anyOf`, and of its `allOf`.
    public static let maxTags = 64
}

/// Where a broadcast is: `queued` (durable, no user published yet), `running`, `done` (every user
/// of the audience published or failed) or `cancelled` (what was not published when it was
/// cancelled never will be).
public struct BroadcastStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let queued = BroadcastStatus(rawValue: "queued")
    public static let running = BroadcastStatus(rawValue: "running")
    public static let done = BroadcastStatus(rawValue: "done")
    public static let cancelled = BroadcastStatus(rawValue: "cancelled")
    /// Whether the broadcast may still publish.
    public var isOpen: Bool { self == .queued || self == .running }
    public var description: String { rawValue }
}

/// One publish body for a whole audience: each user gets their own notification with the
/// broadcast's `appNotificationId` (so a user in two broadcasts with the same ID gets one
/// notification, updated), published in chunks by ``Hub``'s expander.
public struct Broadcast: Sendable, Hashable, Identifiable {
    public var appId: String
    /// The hub's ID of the broadcast.
    public var id: String
    public var audience: BroadcastAudience
    /// What every user gets, validated at creation; its `expirationDateTime` is fixed then.
    public var draft: NotificationDraft
    public var status: BroadcastStatus
    /// How many users the audience has: known at creation for a user list, when the expansion
    /// reached the end of the audience otherwise.
    public var audienceSize: Int?
    /// Users whose notification was stored.
    public var published: Int
    /// Users whose publish was refused (the draft's expiry passed before their chunk, …).
    public var failed: Int
    public var createdDateTime: Date
    public var lastModifiedDateTime: Date
    /// When it became `done` or `cancelled`.
    public var completedDateTime: Date?

    /// A broadcast as created: `queued`, nothing published.
    public init(
        appId: String, id: String, audience: BroadcastAudience, draft: NotificationDraft,
        status: BroadcastStatus = .queued, audienceSize: Int? = nil, published: Int = 0, failed: Int = 0,
        createdDateTime: Date, lastModifiedDateTime: Date? = nil, completedDateTime: Date? = nil
    ) {
        self.appId = appId
        self.id = id
        self.audience = audience
        self.draft = draft
        self.status = status
        self.audienceSize = audienceSize
        self.published = published
        self.failed = failed
        self.createdDateTime = createdDateTime
        self.lastModifiedDateTime = lastModifiedDateTime ?? createdDateTime
        self.completedDateTime = completedDateTime
    }
}

/// Users of one broadcast leased to one instance to publish: the next users of the audience in
/// user ID order (byte order), or a chunk whose lease expired (its instance died) taken over.
public struct BroadcastChunk: Sendable, Hashable {
    /// The broadcast, as it was when the chunk was leased.
    public var broadcast: Broadcast
    /// The chunk's users, in ID order; the last one names the chunk.
    public var users: [String]
    /// The instance holding the lease.
    public var owner: String
    public var leaseUntil: Date

    public init(broadcast: Broadcast, users: [String], owner: String, leaseUntil: Date) {
        self.broadcast = broadcast
        self.users = users
        self.owner = owner
        self.leaseUntil = leaseUntil
    }

    /// The chunk's key within its broadcast: its last user.
    public var through: String { users.last ?? "" }
}

/// User tags and broadcasts.
///
/// Tags are set by the app server per user (replaced as a whole). A broadcast is stored with its
/// audience (a user list is stored with it) and expanded in chunks: ``leaseBroadcastChunk(size:owner:now:leaseUntil:)``
/// takes the next users after the broadcast's persisted cursor, in user ID order (byte order),
/// records the chunk with a lease and moves the cursor, in one transaction; several instances
/// lease chunks of one broadcast at once, and a chunk whose lease expired is leased again (its
/// users are published again, idempotently). Memory is bounded by the chunk size whatever the
/// audience's size.
///
/// Every ``Store`` is one; the defaults throw ``HubError`` `unsupported`.
public protocol AudienceStore: Sendable {
    /// Replaces the user's tags (validated already; duplicates removed).
    func replaceTags(_ key: FeedKey, with tags: [String]) async throws
    /// The user's tags, in byte order.
    func tags(_ key: FeedKey) async throws -> [String]

    /// Stores a new broadcast (and, for a `users` audience, its `users`, duplicates counted once).
    /// - Returns: the broadcast as stored (a user list's `audienceSize` is its distinct users).
    func createBroadcast(_ broadcast: Broadcast, users: [String]) async throws -> Broadcast
    func broadcast(appId: String, id: String) async throws -> Broadcast?
    /// The app's broadcasts, newest first, after the broadcast `after` (a page's last), at most `limit`.
    func broadcasts(appId: String, after: String?, limit: Int) async throws -> [Broadcast]
    /// Cancels an open broadcast: no chunk of it is leased again. A chunk being published
    /// finishes. A finished broadcast is returned unchanged.
    /// - Returns: the broadcast, or `nil` when there is none.
    func cancelBroadcast(appId: String, id: String, at now: Date) async throws -> Broadcast?

    /// Leases a chunk of at most `size` users of an open broadcast to `owner` until `leaseUntil`:
    /// an expired chunk first, or one `owner` holds already (an instance publishes one chunk at a
    /// time, so that is its chunk from before a restart under the same name), else the next users of the oldest open broadcast (which becomes
    /// `running`). A broadcast whose audience has no user left and no chunk outstanding becomes
    /// `done`, its `audienceSize` known.
    /// - Returns: `nil` when there is nothing to publish now.
    func leaseBroadcastChunk(size: Int, owner: String, now: Date, leaseUntil: Date) async throws -> BroadcastChunk?

    /// Records that `chunk` was published (`published` users stored, `failed` refused) and ends it.
    /// A chunk no longer leased by its owner (taken over) counts nothing. The last chunk of an
    /// exhausted audience makes the broadcast `done`.
    func finishBroadcastChunk(_ chunk: BroadcastChunk, published: Int, failed: Int, at now: Date) async throws
}

extension AudienceStore {
    public func replaceTags(_ key: FeedKey, with tags: [String]) async throws { throw HubError.audiencesUnsupported }
    public func tags(_ key: FeedKey) async throws -> [String] { throw HubError.audiencesUnsupported }
    public func createBroadcast(_ broadcast: Broadcast, users: [String]) async throws -> Broadcast {
        throw HubError.audiencesUnsupported
    }
    public func broadcast(appId: String, id: String) async throws -> Broadcast? { throw HubError.audiencesUnsupported }
    public func broadcasts(appId: String, after: String?, limit: Int) async throws -> [Broadcast] {
        throw HubError.audiencesUnsupported
    }
    public func cancelBroadcast(appId: String, id: String, at now: Date) async throws -> Broadcast? {
        throw HubError.audiencesUnsupported
    }
    /// A store without broadcasts has none to expand.
    public func leaseBroadcastChunk(
        size: Int, owner: String, now: Date, leaseUntil: Date
    ) async throws
        -> BroadcastChunk?
    { nil }
    public func finishBroadcastChunk(_ chunk: BroadcastChunk, published: Int, failed: Int, at now: Date) async throws {
        throw HubError.audiencesUnsupported
    }
}

extension HubError {
    /// What a store without tags and broadcasts throws.
    static let audiencesUnsupported = HubError(
        .unsupported,
        "This store keeps no user tags or broadcasts: use the SQLite or the PostgreSQL store, or implement "
            + "AudienceStore in yours.")
}

/// Merging the sorted user lists of an audience's parts (a user with endpoints and a feed, the
/// tags of an `anyOf`): user IDs compare byte for byte, as the stores order them.
public enum AudienceOrder {
    /// Whether `a` sorts before `b` in the stores' order (UTF-8 bytes).
    public static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// The first `limit` distinct IDs of several lists sorted by ``precedes(_:_:)``, in that order.
    public static func merge(_ lists: [[String]], limit: Int) -> [String] {
        var merged: [String] = []
        var heads = Array(repeating: 0, count: lists.count)
        while merged.count < limit {
            var best: String?
            for (index, list) in lists.enumerated() where heads[index] < list.count {
                let candidate = list[heads[index]]
                if best.map({ precedes(candidate, $0) }) ?? true { best = candidate }
            }
            guard let next = best else { break }
            for (index, list) in lists.enumerated()
            where heads[index] < list.count && list[heads[index]].utf8.elementsEqual(next.utf8) {
                heads[index] += 1
            }
            merged.append(next)
        }
        return merged
    }
}

/// The JSON a store keeps a broadcast's draft and tag lists in.
public enum BroadcastJSON {
    /// The draft as JSON text.
    public static func encode(_ draft: NotificationDraft) throws -> String {
        String(decoding: try encoder.encode(draft), as: UTF8.self)
    }

    /// A draft stored as JSON text by `encode(_:)`.
    public static func draft(_ text: String) throws -> NotificationDraft {
        try JSONDecoder().decode(NotificationDraft.self, from: Data(text.utf8))
    }

    /// A list of strings as a JSON array.
    public static func encode(_ list: [String]) throws -> String {
        String(decoding: try encoder.encode(list), as: UTF8.self)
    }

    /// A list stored as a JSON array by `encode(_:)`.
    public static func list(_ text: String) throws -> [String] {
        try JSONDecoder().decode([String].self, from: Data(text.utf8))
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
