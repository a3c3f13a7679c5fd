import Foundation
import Synchronization

/// Who holds a lane's send slots, and whether the next delivery may take one: the lane's fairness
/// rule, in one place.
///
/// A delivery may be sent when
/// - its **app** holds less than its weighted share of the lane: `concurrency × weight / Σ weight`
///   over the apps with sends in flight in the lane (itself included), so an app alone may use the
///   whole lane, and an app that arrives takes slots as the others' sends return;
/// - its **user** holds less than ``DispatcherConfiguration/maxUserShare`` of the lane (at least
///   one slot);
/// - its **destination host** (``Transport/destination(of:)``, when the transport names one) holds
///   less than ``DispatcherConfiguration/maxHostShare`` of the lane, and is not backing off: a
///   host that could not be reached (``ProviderReply/unreachable``: its name did not resolve or
///   the connection failed) is not tried again before its back-off ends
///   (``DispatcherConfiguration/initialHostBackoff`` doubling up to
///   ``DispatcherConfiguration/maxHostBackoff``), and then by one send at a time until one
///   reaches it.
///
/// A delivery over an app, user or host share is *deferred*: put back unsent, due a little later
/// (``DispatcherConfiguration/fairnessDeferral``), without counting an attempt; so one app's or
/// one user's sends that hang cannot hold every slot of the lane, and the lane goes on claiming
/// past them. A delivery to a host that backs off *fails fast*: it is retried when the back-off
/// ends, as a failed attempt, without a connection.
final class LaneShares: Sendable {
    /// What became of a request for a slot.
    enum Admission: Equatable {
        /// Send now; give the ticket back to ``finished(_:unreachable:at:)``.
        case admitted(Ticket)
        /// Over a share (`reason`: `user`, `host`, `app`, or `probe` while one send finds out
        /// whether a backed-off host is back): put back unsent, due at `until`.
        case deferred(until: Date, reason: String)
        /// The host is backing off after failures to reach it: retry no earlier than `until`.
        case hostDown(until: Date, reason: String)
    }

    /// What one admitted send holds.
    struct Ticket: Equatable {
        var app: String
        var user: FeedKey
        var host: String?
    }

    struct HostFailures {
        var count: Int
        var until: Date
        var lastError: String
    }

    struct State {
        var apps: [String: Int] = [:]
        var users: [FeedKey: Int] = [:]
        var hosts: [String: Int] = [:]
        /// In-flight weight of the apps with sends in flight.
        var weights: [String: Int] = [:]
        var failing: [String: HostFailures] = [:]
    }

    let concurrency: Int
    let userCap: Int
    let hostCap: Int
    let deferral: Duration
    let initialHostBackoff: Duration
    let maxHostBackoff: Duration
    private let state = Mutex(State())

    init(concurrency: Int, configuration: DispatcherConfiguration) {
        self.concurrency = max(1, concurrency)
        self.userCap = Self.cap(concurrency, share: configuration.maxUserShare)
        self.hostCap = Self.cap(concurrency, share: configuration.maxHostShare)
        self.deferral = configuration.fairnessDeferral
        self.initialHostBackoff = configuration.initialHostBackoff
        self.maxHostBackoff = configuration.maxHostBackoff
    }

    /// `share` of `concurrency` slots, at least one.
    static func cap(_ concurrency: Int, share: Double) -> Int {
        max(1, min(concurrency, Int((Double(concurrency) * min(max(share, 0), 1)).rounded(.down))))
    }

    /// Whether a delivery of `app` (of `weight`) for `user` to `host` may take a slot now; takes it if so.
    func admit(app: String, weight: Int, user: FeedKey, host: String?, at now: Date) -> Admission {
        state.withLock { state in
            if let host, let failures = state.failing[host] {
                if now < failures.until {
                    return .hostDown(
                        until: failures.until,
                        reason:
                            "\(host) could not be reached (\(failures.count) time(s) in a row; last: \(failures.lastError)); "
                            + "not tried again before its back-off ends")
                }
                // The back-off ended: one send at a time finds out whether the host is back.
                if state.hosts[host, default: 0] >= 1 {
                    return .deferred(until: now.addingTimeInterval(deferral.seconds), reason: "probe")
                }
            }
            if let host, state.hosts[host, default: 0] >= hostCap {
                return .deferred(until: now.addingTimeInterval(deferral.seconds), reason: "host")
            }
            if state.users[user, default: 0] >= userCap {
                return .deferred(until: now.addingTimeInterval(deferral.seconds), reason: "user")
            }
            let weight = max(1, weight)
            let held = state.apps[app, default: 0]
            if held > 0 {
                let total = state.weights.values.reduce(0, +)
                let appCap = max(1, (concurrency * weight + total - 1) / max(total, 1))
                if held >= appCap {
                    return .deferred(until: now.addingTimeInterval(deferral.seconds), reason: "app")
                }
            }
            state.apps[app, default: 0] += 1
            state.weights[app] = weight
            state.users[user, default: 0] += 1
            if let host { state.hosts[host, default: 0] += 1 }
            return .admitted(Ticket(app: app, user: user, host: host))
        }
    }

    /// Gives back the slot of `ticket`; `unreachable` (with the error) when the send could not
    /// reach its host, which then backs off; a send that reached it ends the host's back-off.
    func finished(_ ticket: Ticket, unreachable: String?, at now: Date) {
        state.withLock { state in
            Self.decrement(&state.apps, ticket.app)
            if state.apps[ticket.app] == nil { state.weights[ticket.app] = nil }
            Self.decrement(&state.users, ticket.user)
            guard let host = ticket.host else { return }
            Self.decrement(&state.hosts, host)
            if let unreachable {
                let count = (state.failing[host]?.count ?? 0) + 1
                state.failing[host] = HostFailures(
                    count: count,
                    until: now.addingTimeInterval(
                        Self.backoff(count, initial: initialHostBackoff, max: maxHostBackoff).seconds),
                    lastError: String(unreachable.prefix(300)))
            } else {
                state.failing[host] = nil
            }
        }
    }

    /// The back-off after `failures` failures in a row to reach a host: `initial` doubling up to `max`.
    static func backoff(_ failures: Int, initial: Duration, max: Duration) -> Duration {
        let exponent = Double(Swift.max(0, Swift.min(failures - 1, 20)))
        return min(.milliseconds(Int64(initial.seconds * 1000 * pow(2, exponent))), max)
    }

    /// Sends in flight of `user` (tests).
    func inFlight(user: FeedKey) -> Int { state.withLock { $0.users[user, default: 0] } }

    /// Sends in flight to `host` (tests).
    func inFlight(host: String) -> Int { state.withLock { $0.hosts[host, default: 0] } }

    private static func decrement<Key: Hashable>(_ counts: inout [Key: Int], _ key: Key) {
        guard let value = counts[key] else { return }
        counts[key] = value > 1 ? value - 1 : nil
    }
}
