import Foundation
import Testing

@testable import HubCore

/// The lane's fairness rule (issue 46): app, user and host shares, and host back-off.
@Suite("dispatcher: lane shares")
struct LaneSharesTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func shares(
        _ concurrency: Int = 16, _ configure: (inout DispatcherConfiguration) -> Void = { _ in }
    )
        -> LaneShares
    {
        var configuration = DispatcherConfiguration()
        configure(&configuration)
        return LaneShares(concurrency: concurrency, configuration: configuration)
    }

    static func ticket(_ admission: LaneShares.Admission) -> LaneShares.Ticket? {
        if case .admitted(let ticket) = admission { return ticket }
        return nil
    }

    @Test("one user holds at most its share; other users and apps still get slots")
    func userShare() {
        let shares = Self.shares()
        let mallory = FeedKey(appId: "a", userId: "mallory")
        let admitted = (0..<10).compactMap { _ in
            Self.ticket(shares.admit(app: "a", weight: 1, user: mallory, host: nil, at: Self.t0))
        }
        #expect(admitted.count == 4, "a quarter of 16")
        #expect(shares.inFlight(user: mallory) == 4)
        guard case .deferred(let until, _) = shares.admit(app: "a", weight: 1, user: mallory, host: nil, at: Self.t0)
        else {
            Issue.record("the fifth send of the user is deferred")
            return
        }
        #expect(until == Self.t0.addingTimeInterval(1), "deferred by fairnessDeferral")
        #expect(
            Self.ticket(
                shares.admit(app: "a", weight: 1, user: .init(appId: "a", userId: "alice"), host: nil, at: Self.t0))
                != nil)
        #expect(
            Self.ticket(
                shares.admit(app: "b", weight: 1, user: .init(appId: "b", userId: "bob"), host: nil, at: Self.t0))
                != nil)
        shares.finished(admitted[0], unreachable: nil, at: Self.t0)
        #expect(
            Self.ticket(shares.admit(app: "a", weight: 1, user: mallory, host: nil, at: Self.t0)) != nil, "a freed slot"
        )
    }

    @Test("apps share the lane by weight while several have sends in flight; one alone may use it all")
    func appShare() {
        let shares = Self.shares(12) { $0.maxUserShare = 1 }
        var a: [LaneShares.Ticket] = []
        for index in 0..<12 {
            if let ticket = Self.ticket(
                shares.admit(app: "a", weight: 1, user: .init(appId: "a", userId: "u\(index)"), host: nil, at: Self.t0))
            {
                a.append(ticket)
            }
        }
        #expect(a.count == 12, "an app alone may take every slot")
        for ticket in a.prefix(8) { shares.finished(ticket, unreachable: nil, at: Self.t0) }
        // b (weight 2) arrives: a's share is 12 × 1/3 = 4, b's 8.
        var b = 0
        for index in 0..<12 {
            if Self.ticket(
                shares.admit(app: "b", weight: 2, user: .init(appId: "b", userId: "u\(index)"), host: nil, at: Self.t0))
                != nil
            {
                b += 1
            }
        }
        #expect(b == 8, "b takes its weighted share: \(b)")
        let more = shares.admit(app: "a", weight: 1, user: .init(appId: "a", userId: "x"), host: nil, at: Self.t0)
        #expect(Self.ticket(more) == nil, "a is at its share (4 of 12)")
    }

    @Test("a host holds at most its share; an unreachable host backs off, doubling, then is probed by one send")
    func hostShareAndBackoff() {
        let shares = Self.shares(8) { $0.maxUserShare = 1 }
        func admit(_ user: String, _ host: String, at: Date = Self.t0) -> LaneShares.Admission {
            shares.admit(app: "a", weight: 1, user: .init(appId: "a", userId: user), host: host, at: at)
        }
        let held = (0..<8).compactMap { Self.ticket(admit("u\($0)", "slow.example")) }
        #expect(held.count == 4, "half of 8 to one host")
        #expect(Self.ticket(admit("v", "other.example")) != nil, "another host still gets a slot")

        let first = Self.ticket(admit("w", "down.example"))!
        shares.finished(first, unreachable: "connection refused", at: Self.t0)
        guard case .hostDown(let until, let reason) = admit("w", "down.example", at: Self.t0.addingTimeInterval(0.5))
        else {
            Issue.record("sends to a host that was unreachable fail fast")
            return
        }
        #expect(until == Self.t0.addingTimeInterval(1))
        #expect(reason.contains("connection refused"))
        let probe = Self.ticket(admit("w", "down.example", at: Self.t0.addingTimeInterval(1)))
        #expect(probe != nil, "after the back-off, one send probes")
        #expect(Self.ticket(admit("x", "down.example", at: Self.t0.addingTimeInterval(1))) == nil, "only one")
        shares.finished(probe!, unreachable: "connection refused", at: Self.t0.addingTimeInterval(1))
        guard case .hostDown(let later, _) = admit("w", "down.example", at: Self.t0.addingTimeInterval(1.5)) else {
            Issue.record("a second failure backs off again")
            return
        }
        #expect(later == Self.t0.addingTimeInterval(3), "the back-off doubled")
        let recovered = Self.ticket(admit("w", "down.example", at: Self.t0.addingTimeInterval(3)))!
        shares.finished(recovered, unreachable: nil, at: Self.t0.addingTimeInterval(3))
        let after = (0..<2).compactMap {
            Self.ticket(admit("y\($0)", "down.example", at: Self.t0.addingTimeInterval(3)))
        }
        #expect(after.count == 2, "a send that reached the host ends its back-off")
    }
}
