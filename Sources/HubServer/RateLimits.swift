import HubCore
import Synchronization

/// A token bucket's size: `count` requests at once, refilled evenly over `period` (`100/s`,
/// `600/m`: bursts of up to `count`, then `count` per `period`).
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public var count: Int
    public var period: Duration

    public init(_ count: Int, per period: Duration) {
        self.count = count
        self.period = period
    }

    /// Tokens per second.
    var rate: Double { Double(count) / period.seconds }

    public var description: String {
        let seconds = period.components.seconds
        let unit = seconds == 1 ? "s" : seconds == 60 ? "m" : seconds == 3600 ? "h" : "\(seconds)s"
        return "\(count)/\(unit)"
    }
}

/// The inbound rate limits of one cross-device app (hub.yaml `rateLimits`, overridden per app by
/// `apps[].rateLimits`). Each is a token bucket kept in memory by each hub instance; `nil` turns
/// one off. A request over a limit gets 429 `rate-limited` with `Retry-After`, and counts in
/// `hub_rate_limited_total{limit,app}`.
public struct RateLimits: Sendable, Equatable {
    /// Every request with one publisher key (publishes, history, deletes): `publisherKey`.
    public var publisherKey: RateLimit?
    /// Publishes to one user, whatever the key: `userPublishes`.
    public var userPublishes: RateLimit?
    /// Every device request with one user token (feed reads, long-polls, event streams, state
    /// changes, endpoint registrations): `deviceToken`.
    public var deviceToken: RateLimit?
    /// Requests without valid credentials from one client IP address: `clientIP`. Each failed
    /// authentication takes a token; once they are gone, requests from that address whose
    /// credentials the hub has not seen succeed get 429 before any verification. The bucket is one
    /// per address for the whole hub: every app's routes, app IDs that are not configured and the
    /// console's sign-in take from it (each with its own app's limit; the sign-in with the
    /// hub-wide one). Behind a reverse proxy, list it in ``HubServerConfiguration/trustedProxies``
    /// so `X-Forwarded-For` names the client.
    public var clientIP: RateLimit?

    public init(
        publisherKey: RateLimit? = RateLimit(20_000, per: .seconds(1)),
        userPublishes: RateLimit? = RateLimit(600, per: .seconds(60)),
        deviceToken: RateLimit? = RateLimit(300, per: .seconds(60)),
        clientIP: RateLimit? = RateLimit(120, per: .seconds(60))
    ) {
        self.publisherKey = publisherKey
        self.userPublishes = userPublishes
        self.deviceToken = deviceToken
        self.clientIP = clientIP
    }

    /// No limits at all.
    public static let off = RateLimits(publisherKey: nil, userPublishes: nil, deviceToken: nil, clientIP: nil)
}

/// Which limit a bucket enforces: the `limit` label of `hub_rate_limited_total`.
enum RateLimitKind: String, Sendable {
    case publisherKey, userPublishes, deviceToken, clientIP
}

/// Token buckets in memory, bounded: a bucket that has refilled is the same as no bucket, so
/// buckets idle that long are dropped whenever the table doubles, and above ``capacity`` the
/// least recently used half goes too.
final class RateLimiter: Sendable {
    struct Key: Hashable, Sendable {
        let kind: RateLimitKind
        let app: String
        /// The publisher's name, the user ID, a hash of the device token, or the client address.
        let subject: String
    }

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        /// Full again at this time (when it may be dropped).
        var fullAt: ContinuousClock.Instant
        /// Device tokens only: a request with this token was authenticated.
        var verified = false
    }

    private struct State {
        var buckets: [Key: Bucket] = [:]
        var pruneAt = 10_000
    }

    private let state = Mutex(State())
    let capacity: Int
    /// What the buckets refill by (the hub's).
    let clock: any HubClock

    init(capacity: Int = 200_000, clock: any HubClock = SystemClock()) {
        self.capacity = capacity
        self.clock = clock
    }

    /// Takes `count` tokens from the bucket of `key` (the items of a batch publish each count),
    /// all or none. A count larger than the bucket takes a full bucket and leaves it owing the
    /// rest, so that the next request waits for it.
    /// - Returns: `nil` when there were enough; else how long until there are.
    func take(_ key: Key, limit: RateLimit, count: Int = 1) -> Duration? {
        let now = clock.now
        let needed = Double(min(max(count, 1), limit.count))
        return state.withLock { state in
            if state.buckets.count >= state.pruneAt { Self.prune(&state, now: now, capacity: capacity) }
            var bucket = Self.refilled(state.buckets[key], limit: limit, now: now)
            defer { state.buckets[key] = bucket }
            guard bucket.tokens >= needed else {
                return .milliseconds(Int64(((needed - bucket.tokens) / limit.rate * 1000).rounded(.up)))
            }
            bucket.tokens -= Double(max(count, 1))
            bucket.fullAt = now + .milliseconds(Int64((Double(limit.count) - bucket.tokens) / limit.rate * 1000))
            return nil
        }
    }

    /// Whether the bucket of `key` has a token now (taking none).
    func hasToken(_ key: Key, limit: RateLimit) -> Duration? {
        let now = clock.now
        return state.withLock { state in
            let bucket = Self.refilled(state.buckets[key], limit: limit, now: now)
            guard bucket.tokens < 1 else { return nil }
            return .milliseconds(Int64(((1 - bucket.tokens) / limit.rate * 1000).rounded(.up)))
        }
    }

    /// Marks a device token's bucket as belonging to a token that authenticated.
    func markVerified(_ key: Key) {
        state.withLock { $0.buckets[key]?.verified = true }
    }

    func isVerified(_ key: Key) -> Bool {
        state.withLock { $0.buckets[key]?.verified ?? false }
    }

    var bucketCount: Int { state.withLock { $0.buckets.count } }

    private static func refilled(_ bucket: Bucket?, limit: RateLimit, now: ContinuousClock.Instant) -> Bucket {
        guard var bucket else {
            return Bucket(tokens: Double(limit.count), updated: now, fullAt: now)
        }
        let elapsed = (now - bucket.updated).seconds
        bucket.tokens = min(Double(limit.count), bucket.tokens + max(0, elapsed) * limit.rate)
        bucket.updated = now
        return bucket
    }

    private static func prune(_ state: inout State, now: ContinuousClock.Instant, capacity: Int) {
        state.buckets = state.buckets.filter { $0.value.fullAt > now }
        if state.buckets.count > capacity / 2 {
            let kept = state.buckets.sorted { $0.value.updated > $1.value.updated }.prefix(capacity / 2)
            state.buckets = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        state.pruneAt = max(10_000, state.buckets.count * 2)
    }
}
