import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres
@testable import HubSQLite

/// A model-based, differential test of the outbox: random, seeded sequences of ``OutboxStep``s
/// applied through the public store protocols to each store and to ``OutboxReference``; after
/// every step the outboxes, endpoints, feeds and returned values must be equal. A failing
/// sequence is shrunk (steps dropped while it still fails) and printed with its seed.
enum OutboxDifferential {
    static let app = "notes.contoso.com"
    static let users = ["alice", "bob"]
    static let endpointIds = ["e1", "e2", "e3"]
    static let fcm = TransportID("fcm")
    static let polling = TransportID("polling")
    static let transports = [TransportID.apns, fcm, polling]
    static let owners = ["A", "B"]
    static let lease = 30

    // MARK: Steps

    enum OutcomeKind: Hashable, CustomStringConvertible {
        case delivered, rejected
        /// `endpointGone`; `since`: the provider's time, seconds from now (`nil`: none).
        case gone(since: Int?)
        case retry(after: Int)
        case suspend
        /// Put back unsent (a lane share was full): one attempt fewer.
        case release(after: Int)

        var description: String {
            switch self {
            case .delivered: "delivered"
            case .rejected: "rejected"
            case .gone(let since): "gone(since: \(since.map { "now\($0 >= 0 ? "+" : "")\($0)" } ?? "nil"))"
            case .retry(let after): "retry(+\(after))"
            case .suspend: "suspend"
            case .release(let after): "release(+\(after))"
            }
        }
    }

    enum Lane: Hashable, CustomStringConvertible {
        case all, apns, fcm, notAPNs
        var lane: OutboxLane {
            switch self {
            case .all: .all
            case .apns: .transport(.apns)
            case .fcm: .transport(OutboxDifferential.fcm)
            case .notAPNs: .otherThan([.apns])
            }
        }
        var description: String {
            switch self {
            case .all: "all"
            case .apns: "apns"
            case .fcm: "fcm"
            case .notAPNs: "otherThan(apns)"
            }
        }
    }

    struct Publish: Hashable, CustomStringConvertible {
        var user: String
        var notification: String
        var priority: NotificationPriority
        var visible: Bool
        var platforms: [Platform]
        var fallback: Bool
        var expiresIn: Int
        /// The hand-off's owner and transports (`nil`: no hand-off).
        var handOff: (owner: String, transports: [TransportID])?

        static func == (a: Self, b: Self) -> Bool { a.description == b.description }
        func hash(into hasher: inout Hasher) { hasher.combine(description) }

        var description: String {
            "\(user)/\(notification) \(priority)\(visible ? " visible" : "")"
                + "\(platforms.isEmpty ? "" : " to \(platforms)")\(fallback ? " fallback" : "")"
                + " expiresIn=\(expiresIn)"
                + (handOff.map { " handOff(\($0.owner), \($0.transports.map(\.rawValue)))" } ?? "")
        }
    }

    enum Action: Hashable, CustomStringConvertible {
        case register(user: String, endpoint: String, transport: TransportID)
        case deleteEndpoint(user: String, endpoint: String)
        case publish(Publish)
        /// ``FeedStore/publish(batch:)``: batch publishes and broadcast chunks (one hand-off for all).
        case publishBatch([Publish])
        case delete(user: String, notification: String)
        case updateState(user: String, notification: String, dismiss: Bool, except: String?)
        case claim(Lane, owner: String, limit: Int)
        case renew(owner: String, keys: [String])
        case outcomes([(key: String, kind: OutcomeKind)])
        case release(owner: String)
        case resume
        case advance(seconds: Int)
        case sweep(retention: Int)

        static func == (a: Self, b: Self) -> Bool { a.description == b.description }
        func hash(into hasher: inout Hasher) { hasher.combine(description) }

        var description: String {
            switch self {
            case .register(let user, let endpoint, let transport): "register \(user)/\(endpoint) on \(transport)"
            case .deleteEndpoint(let user, let endpoint): "deleteEndpoint \(user)/\(endpoint)"
            case .publish(let p): "publish \(p)"
            case .publishBatch(let batch): "publishBatch [\(batch.map { "\($0)" }.joined(separator: "; "))]"
            case .delete(let user, let notification): "delete \(user)/\(notification)"
            case .updateState(let user, let notification, let dismiss, let except):
                "updateState \(user)/\(notification) \(dismiss ? "dismissed" : "read") except=\(except ?? "-")"
            case .claim(let lane, let owner, let limit): "claim \(lane) by \(owner) limit=\(limit)"
            case .renew(let owner, let keys): "renew \(keys) by \(owner)"
            case .outcomes(let outcomes): "outcomes \(outcomes.map { "\($0.key): \($0.kind)" })"
            case .release(let owner): "releaseLeases \(owner)"
            case .resume: "resumeSuspended"
            case .advance(let seconds): "advance \(seconds)s"
            case .sweep(let retention): "sweep retention=\(retention)s"
            }
        }
    }

    /// One step of a sequence. `tag` names the rows it creates, so that a shrunk sequence's
    /// later steps still find them.
    struct Step: Hashable, CustomStringConvertible {
        var tag: Int
        var action: Action
        var description: String { "#\(tag) \(action)" }
    }

    // MARK: Generation

    /// The seeded generator (HubTesting's SplitMix64): a seed replays a sequence exactly.
    typealias Random = SeededGenerator

    /// `count` steps from `seed`, each drawn from the reference model's state (outcomes and
    /// renewals name rows it holds leased).
    static func generate(seed: UInt64, count: Int) -> [Step] {
        var random = Random(seed: seed)
        var model = Model()
        var steps: [Step] = []
        for tag in 0..<count {
            let step = Step(tag: tag, action: action(&random, model))
            _ = model.apply(step)
            steps.append(step)
        }
        return steps
    }

    static func action(_ random: inout Random, _ model: Model) -> Action {
        let leased = model.reference.rows.filter { $0.pending && $0.leaseOwner != nil }
        let roll = Int.random(in: 0..<100, using: &random)
        func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }
        switch roll {
        case 0..<12:
            return .register(user: pick(users), endpoint: pick(endpointIds), transport: pick(transports))
        case 12..<15:
            return .deleteEndpoint(user: pick(users), endpoint: pick(endpointIds))
        case 15..<37:
            let handOff: (String, [TransportID])? =
                Bool.random(using: &random)
                ? (pick(owners), pick([[.apns], [fcm], [.apns, fcm]])) : nil
            func publish(_ user: String? = nil) -> Publish {
                Publish(
                    user: user ?? pick(users), notification: pick(["n1", "n2", "n3"]),
                    priority: pick([.none, .low, .high]),
                    visible: Int.random(in: 0..<10, using: &random) < 3, platforms: pick([[], [], [.ios], [.android]]),
                    fallback: Int.random(in: 0..<10, using: &random) < 3, expiresIn: pick([120, 86_400]),
                    handOff: handOff)
            }
            // A quarter are batches (one hand-off for the batch, as a hub gives it): two to five
            // publishes, each to any feed: one feed several times, one to each feed, or feeds
            // interleaved (alice, bob, alice), which a store must number in request order
            // (`OutboxMachine.batchSegments`); claims show it when priorities and due times tie.
            guard roll >= 31 else { return .publish(publish()) }
            return .publishBatch((0..<Int.random(in: 2...5, using: &random)).map { _ in publish() })
        case 37..<42:
            return .delete(user: pick(users), notification: pick(["n1", "n2", "n3"]))
        case 42..<48:
            return .updateState(
                user: pick(users), notification: pick(["n1", "n2", "n3"]), dismiss: Bool.random(using: &random),
                except: pick([nil, "e1", "e2"]))
        case 48..<62:
            return .claim(pick([.all, .all, .apns, .fcm, .notAPNs]), owner: pick(owners), limit: pick([1, 2, 100]))
        case 62..<78 where !leased.isEmpty:
            let count = Int.random(in: 1...min(3, leased.count), using: &random)
            let rows = leased.shuffled(using: &random).prefix(count)
            let kinds: [OutcomeKind] = [
                .delivered, .delivered, .rejected, .gone(since: nil), .gone(since: -100), .gone(since: 0),
                .retry(after: 5), .retry(after: 60), .suspend, .release(after: 1),
            ]
            return .outcomes(rows.map { ($0.key, pick(kinds)) })
        case 78..<81 where !leased.isEmpty:
            let owner = pick(leased).leaseOwner!
            return .renew(owner: owner, keys: leased.filter { $0.leaseOwner == owner }.map(\.key))
        case 81..<84:
            return .release(owner: pick(owners))
        case 84..<87:
            return .resume
        case 87..<96:
            return .advance(seconds: pick([1, 5, 31, 61, 130, 3_600]))
        case 96..<100:
            return .sweep(retention: pick([0, 100, 1_000]))
        default:
            return .claim(.all, owner: pick(owners), limit: 100)
        }
    }

    // MARK: Applying

    /// The reference model with the test's clock.
    struct Model {
        var reference = OutboxReference(app: OutboxDifferential.app)
        var now = 0

        /// Whether `step` may run now: outcomes and renewals name rows the model holds leased.
        func admits(_ step: Step) -> Step? {
            var step = step
            switch step.action {
            case .outcomes(let outcomes):
                var seen = Set<String>()
                let valid = outcomes.filter { outcome in
                    seen.insert(outcome.key).inserted
                        && reference.rows.contains { $0.key == outcome.key && $0.pending && $0.leaseOwner != nil }
                }
                guard !valid.isEmpty else { return nil }
                step.action = .outcomes(valid)
            case .renew(let owner, let keys):
                let valid = keys.filter { key in reference.rows.contains { $0.key == key && $0.pending } }
                guard !valid.isEmpty else { return nil }
                step.action = .renew(owner: owner, keys: valid)
            default: break
            }
            return step
        }

        /// Applies `step` (which ``admits(_:)`` returned); returns what it returned.
        mutating func apply(_ step: Step) -> [String] {
            let returned = applyStep(step)
            reference.notePurgeAfter()
            return returned
        }

        private mutating func applyStep(_ step: Step) -> [String] {
            let now = OutboxClock.at(self.now)
            switch step.action {
            case .register(let user, let endpoint, let transport):
                reference.upsert(OutboxDifferential.endpoint(user, endpoint, transport, at: now))
                return []
            case .deleteEndpoint(let user, let endpoint):
                return ["\(reference.deleteEndpoint(user: user, id: endpoint))"]
            case .publish(let publish):
                let result = reference.publish(OutboxDifferential.request(publish, step: step, at: now), step: step.tag)
                return ["created=\(result.created)"] + result.handed.sorted()
            case .publishBatch(let batch):
                let results = batch.map {
                    reference.publish(OutboxDifferential.request($0, step: step, at: now), step: step.tag)
                }
                return results.map { "created=\($0.created)" } + results.flatMap(\.handed).sorted()
            case .delete(let user, let notification):
                return ["\(reference.delete(user: user, appNotificationId: notification, at: now, step: step.tag))"]
            case .updateState(let user, let notification, let dismiss, let except):
                let change = OutboxDifferential.stateChange(user, notification, dismiss, except, at: now)
                return ["\(reference.updateState(change, step: step.tag))"]
            case .claim(let lane, let owner, let limit):
                return reference.claim(
                    lane.lane, limit: limit, now: now, owner: owner, leaseUntil: now.addingTimeInterval(Double(lease)))
            case .renew(let owner, let keys):
                reference.renew(keys, owner: owner, until: now.addingTimeInterval(Double(2 * lease)))
                return []
            case .outcomes(let outcomes):
                // Store.recordOutcomes: a delivery's own final answer is recorded before the batch's
                // gone endpoints, retries and suspensions.
                let isOwnAnswer: (OutcomeKind) -> Bool = {
                    switch $0 {
                    case .delivered, .rejected: true
                    default: false
                    }
                }
                for outcome in outcomes.filter({ isOwnAnswer($0.kind) }) + outcomes.filter({ !isOwnAnswer($0.kind) }) {
                    reference.record(outcome.key, OutboxDifferential.change(outcome.kind, at: now), at: now)
                }
                return []
            case .release(let owner):
                reference.releaseLeases(owner: owner)
                return []
            case .resume:
                reference.resumeSuspended(at: now)
                return []
            case .advance(let seconds):
                self.now += seconds
                return []
            case .sweep(let retention):
                reference.sweep(now: now, purgeBefore: now.addingTimeInterval(-Double(retention)), step: step.tag)
                return []
            }
        }
    }

    static func endpoint(_ user: String, _ id: String, _ transport: TransportID, at now: Date) -> Endpoint {
        let platform: Platform = transport == .apns ? .ios : transport == fcm ? .android : .web
        return Endpoint(
            id: id, appId: app, userId: user, platform: platform,
            platformAppId: platform == .ios ? "com.contoso.notes" : "contoso.notes", transport: transport,
            token: transport == polling ? nil : "token-\(user)-\(id)-\(transport)",
            attributes: transport == .apns ? ["environment": "production"] : [:], registeredAt: now)
    }

    static func request(_ publish: Publish, step: Step, at now: Date) -> PublishRequest {
        let draft = NotificationDraft(
            appNotificationId: publish.notification, priority: publish.priority,
            payload: NotificationPayload(
                rawContent: "{\"step\":\(step.tag)}", visualContent: VisualContent(title: "Hello", body: "Body")),
            targetPolicy: TargetPolicy(platformTypes: publish.platforms),
            fallbackPolicy: publish.fallback ? FallbackPolicy(timeoutSeconds: 60) : nil)
        return PublishRequest(
            key: FeedKey(appId: app, userId: publish.user), draft: draft,
            newId: "\(publish.user)-\(publish.notification)-\(step.tag)",
            expirationDateTime: now.addingTimeInterval(Double(publish.expiresIn)),
            deliveryMode: publish.visible ? .visible : .shoulderTap, now: now,
            handOff: publish.handOff.map {
                HandOff(
                    owner: $0.owner, leaseUntil: now.addingTimeInterval(Double(lease)), transports: Set($0.transports))
            })
    }

    static func stateChange(
        _ user: String, _ id: String, _ dismiss: Bool, _ except: String?, at now: Date
    )
        -> StateChange
    {
        StateChange(
            key: FeedKey(appId: app, userId: user), id: id, readState: dismiss ? nil : .read,
            userActionState: dismiss ? .dismissed : nil, exceptEndpoint: except, now: now)
    }

    static func change(_ kind: OutcomeKind, at now: Date) -> OutboxOutcome.Change {
        switch kind {
        case .delivered: .finish(.delivered, detail: nil, goneSince: nil)
        case .rejected: .finish(.rejected, detail: "BadDeviceToken", goneSince: nil)
        case .gone(let since):
            .finish(.endpointGone, detail: "Unregistered", goneSince: since.map { now.addingTimeInterval(Double($0)) })
        case .retry(let after): .retry(dueAt: now.addingTimeInterval(Double(after)), error: "503")
        case .suspend: .suspend(reason: "credentials")
        case .release(let after): .release(dueAt: now.addingTimeInterval(Double(after)))
        }
    }
}
