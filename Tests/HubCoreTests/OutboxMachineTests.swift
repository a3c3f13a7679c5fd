import Foundation
import HubCore
import Testing

@Suite("Outbox machine: the delivery rules after the plan, and their diagram")
struct OutboxMachineTests {
    static let t0 = Date(timeIntervalSince1970: 1_750_000_000)

    /// One line of the article's diagram: `from --event--> to`.
    static func line(_ transition: OutboxMachine.Transition) -> String {
        (transition.from?.rawValue ?? "(new)").padding(toLength: 10, withPad: " ", startingAt: 0)
            + "--\(transition.event)-->".padding(toLength: 20, withPad: " ", startingAt: 0) + transition.to.rawValue
    }

    @Test("The DocC article's diagram is the machine's transition table")
    func articleMatchesTable() throws {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/HubCore/HubCore.docc/DeliveryStates.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let start = try #require(text.range(of: "```text\n"), "DeliveryStates.md has no ```text block")
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        let block = String(text[start.upperBound..<end.lowerBound])
        let expected = OutboxMachine.transitions.map(Self.line).joined(separator: "\n")
        #expect(block == expected, "DeliveryStates.md should show:\n\(expected)")
    }

    @Test("Every phase is reached and every event has an arrow; lookups answer from the table")
    func tableIsComplete() {
        let table = OutboxMachine.transitions
        for phase in OutboxMachine.Phase.allCases {
            #expect(table.contains { $0.to == phase }, "no transition reaches \(phase)")
        }
        for event in OutboxMachine.Event.allCases {
            #expect(table.contains { $0.event == event }, "no transition for \(event)")
        }
        #expect(Set(table).count == table.count, "a transition is listed twice")
        #expect(OutboxMachine.phase(after: .claimed, from: .waiting) == .leased)
        #expect(OutboxMachine.phase(after: .renewed, from: .finished) == nil, "a finished row is left alone")
        #expect(OutboxMachine.phase(after: .purged, from: .leased) == nil, "only finished rows are purged")
    }

    @Test(
        "A tap merge takes the newest change's notification and transport, the higher priority, the earlier due time, and un-parks"
    )
    func tapMerge() {
        let waiting = OutboxMachine.Tap(
            transport: TransportID("apns"), notificationId: "n1", changeVersion: 5, priority: .high,
            dueAt: Self.t0, suspended: true)
        let incoming = OutboxMachine.Tap(
            transport: TransportID("polling"), notificationId: "n2", changeVersion: 7, priority: .low,
            dueAt: Self.t0.addingTimeInterval(10))
        let merged = OutboxMachine.merge(incoming, into: waiting)
        #expect(merged.transport == TransportID("polling"), "the endpoint's transport as the newest change found it")
        #expect(merged.notificationId == "n2")
        #expect(merged.changeVersion == 7)
        #expect(merged.priority == .high)
        #expect(merged.dueAt == Self.t0)
        #expect(!merged.suspended)

        // An older change never takes a version back.
        let older = OutboxMachine.merge(waiting, into: merged)
        #expect(older.changeVersion == 7 && older.notificationId == "n2" && older.transport == TransportID("polling"))
    }

    @Test(
        "A put-back tap is superseded only by another waiting tap, passing on its priority and, if newer, its version and transport, never its due time"
    )
    func putBack() {
        #expect(OutboxMachine.putBack(kind: .shoulderTap, newerTapWaits: true) == .supersedes)
        #expect(OutboxMachine.putBack(kind: .shoulderTap, newerTapWaits: false) == .waits)
        #expect(OutboxMachine.putBack(kind: .visible, newerTapWaits: true) == .waits)
        let waiting = OutboxMachine.Tap(
            transport: TransportID("fcm"), notificationId: "n1", changeVersion: 3, priority: .none,
            dueAt: Self.t0.addingTimeInterval(60), suspended: true)
        let putBack = OutboxMachine.Tap(
            transport: TransportID("apns"), notificationId: "n2", changeVersion: 4, priority: .high, dueAt: Self.t0)
        let result = OutboxMachine.supersede(putBack, into: waiting)
        #expect(result.priority == .high)
        #expect(result.changeVersion == 4 && result.notificationId == "n2")
        #expect(result.transport == TransportID("apns"), "the newer change's transport")
        #expect(result.dueAt == Self.t0.addingTimeInterval(60))
        let stale = OutboxMachine.supersede(waiting, into: putBack)
        #expect(
            stale.transport == TransportID("apns") && stale.changeVersion == 4,
            "an older tap passes on only its priority")
        #expect(!result.suspended)
    }

    @Test("A batch is split in request order into segments of distinct feeds, a new one at each repeated feed")
    func batchSegments() {
        let (alice, bob, carol) = (
            FeedKey(appId: "a", userId: "alice"), FeedKey(appId: "a", userId: "bob"),
            FeedKey(appId: "a", userId: "carol")
        )
        let otherApp = FeedKey(appId: "b", userId: "alice")
        #expect(OutboxMachine.batchSegments([]) == [])
        #expect(OutboxMachine.batchSegments([alice]) == [0..<1])
        #expect(OutboxMachine.batchSegments([alice, bob, carol, otherApp]) == [0..<4], "distinct feeds: one segment")
        #expect(OutboxMachine.batchSegments([alice, alice, alice]) == [0..<1, 1..<2, 2..<3])
        // Not rounds ([0, 1, 3], [2, 4]): consecutive requests, so each segment numbers in request order.
        #expect(OutboxMachine.batchSegments([alice, bob, alice, carol, bob]) == [0..<2, 2..<5])
        #expect(OutboxMachine.batchSegments([alice, bob, alice, carol, carol]) == [0..<2, 2..<4, 4..<5])
        #expect(OutboxMachine.batchSegments([alice, alice, bob, carol, alice]) == [0..<1, 1..<4, 4..<5])
    }

    @Test("A gone verdict deactivates an endpoint registered at or before its time: the provider's, else the claim's")
    func goneVerdict() {
        let claimed = Self.t0
        let registeredAfter = Self.t0.addingTimeInterval(5)
        #expect(OutboxMachine.deactivates(registeredAt: claimed, goneSince: nil, claimedAt: claimed, at: Self.t0 + 9))
        #expect(
            !OutboxMachine.deactivates(
                registeredAt: registeredAfter, goneSince: nil, claimedAt: claimed, at: Self.t0 + 9))
        #expect(
            OutboxMachine.deactivates(
                registeredAt: registeredAfter, goneSince: Self.t0 + 6, claimedAt: claimed, at: Self.t0 + 9))
        #expect(OutboxMachine.inactiveSince(goneSince: nil, at: Self.t0 + 9) == Self.t0 + 9)
        #expect(OutboxMachine.isRecordedFirst(.finish(.delivered, detail: nil, goneSince: nil)))
        #expect(!OutboxMachine.isRecordedFirst(.finish(.endpointGone, detail: nil, goneSince: nil)))
        #expect(!OutboxMachine.isRecordedFirst(.retry(dueAt: Self.t0, error: "503")))
    }

    @Test("A merge renders as the SET list stores update with, in their dialect")
    func setList() {
        let sql = OutboxMachine.setList(
            OutboxMachine.tapMerge, target: \.rawValue, current: { "d.\($0.rawValue)" },
            incoming: { "x.\($0.rawValue)" }, greatest: "GREATEST", least: "LEAST")
        #expect(
            sql == "transport = CASE WHEN x.changeVersion >= d.changeVersion THEN x.transport ELSE d.transport END, "
                + "notificationId = CASE WHEN x.changeVersion >= d.changeVersion THEN x.notificationId "
                + "ELSE d.notificationId END, changeVersion = GREATEST(d.changeVersion, x.changeVersion), "
                + "priority = CASE WHEN x.urgency > d.urgency THEN x.priority ELSE d.priority END, "
                + "urgency = GREATEST(d.urgency, x.urgency), dueAt = LEAST(d.dueAt, x.dueAt), "
                + "suspendedAt = NULL, suspendedReason = NULL")
    }

    @Test("An outcome's row write renders as the SET list stores update with; the send is noted except for a release")
    func rowWrites() {
        func rendered(_ write: OutboxMachine.RowWrite) -> String {
            OutboxMachine.setList(
                write, target: \.rawValue, current: { "d.\($0.rawValue)" }, given: { ":\($0.rawValue)" },
                greatest: "MAX")
        }
        #expect(
            rendered(.suspended)
                == "leaseOwner = NULL, leaseUntil = NULL, dueAt = COALESCE(:dueAt, d.dueAt), "
                + "lastError = COALESCE(:error, d.lastError), firstSentAt = COALESCE(d.firstSentAt, d.claimedAt), "
                + "providerMessageId = COALESCE(:messageId, d.providerMessageId), suspendedAt = :at, "
                + "suspendedReason = :error")
        #expect(
            rendered(.released)
                == "leaseOwner = NULL, leaseUntil = NULL, dueAt = :dueAt, attempts = MAX(0, d.attempts - 1)")
        #expect(
            rendered(.closed)
                == "state = 'finished', result = :result, detail = :detail, finishedAt = :at, leaseOwner = NULL, "
                + "leaseUntil = NULL")
        let given = OutboxMachine.GivenValues(at: Self.t0, dueAt: Self.t0)
        let waits = OutboxMachine.putBackWrite(.released, given, .waits)
        #expect(waits.write == .released && waits.given == given)
        let superseded = OutboxMachine.putBackWrite(.released, given, .supersedes)
        #expect(superseded.write == .supersededByNewerTap(sent: false), "a tap released unsent was not sent")
        #expect(superseded.given.result == .superseded && superseded.given.detail != nil)
        #expect(OutboxMachine.putBackWrite(.retried, given, .supersedes).write == .supersededByNewerTap(sent: true))
        #expect(OutboxMachine.waitingAgain(.suspend(reason: "credentials")) == .suspended)
        #expect(OutboxMachine.waitingAgain(.release(dueAt: Self.t0)) == .released)
        #expect(
            OutboxMachine.waitingTapSQL(\.rawValue)
                == "state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL")
        #expect(OutboxMachine.isWaitingTap(pending: true, kind: .shoulderTap, leaseOwner: nil))
        #expect(!OutboxMachine.isWaitingTap(pending: true, kind: .shoulderTap, leaseOwner: "A"))
        #expect(!OutboxMachine.isWaitingTap(pending: true, kind: .visible, leaseOwner: nil))
    }
}
