public import struct Foundation.Date

// The outbox's rules of claiming, leasing, hand-offs, renewal and purging: each once, as a pure
// decision and as the SQL condition or assignment a store renders in its dialect (its column
// names and bound parameters). A store adds only the SQL's shape (which index, how rows are
// bound); see the rules of merging and putting back in OutboxMachine.swift.
extension OutboxMachine {
    // MARK: Writing a plan

    /// The order in which a plan's new rows are created (numbered): earlier due times first,
    /// then plan order. The row's ID breaks ties in ``claimOrder``, so every store numbers a
    /// plan's rows alike, whether a hand-off leases some of them or not (a row leased and one
    /// left waiting are created in the same order as when neither is).
    /// - Parameter plan: the rows a ``DeliveryPlanner`` planned for one change, in plan order.
    /// - Returns: `plan` in creation order (a stable sort by due time).
    public static func creationOrder(_ plan: [PlannedDelivery]) -> [PlannedDelivery] {
        plan.enumerated().sorted { ($0.element.dueAt, $0.offset) < ($1.element.dueAt, $1.offset) }.map(\.element)
    }

    /// How a store may group the requests of a batch publish (``FeedStore/publish(batch:)``)
    /// into statements that write several at once.
    ///
    /// A batch is applied in request order, each request as a single publish would be: its
    /// change version, and the numbers of its new rows (which break ties of priority and due
    /// time in ``claimOrder``), come after those of every earlier request of the batch, whatever
    /// its feed. A statement that writes several requests numbers them in request order, and none
    /// of them sees what another writes; so it may only take consecutive requests of distinct
    /// feeds (a later request to a feed reads what the earlier one wrote: the notification it
    /// updates, the tap it merges into). A batch of distinct feeds is one segment.
    /// - Parameter feeds: each request's feed, in request order.
    /// - Returns: consecutive ranges of `feeds` covering it in order, each of distinct feeds; a
    ///   new range starts at the first request whose feed the current one already has (as few
    ///   ranges as the rule allows).
    public static func batchSegments(_ feeds: [FeedKey]) -> [Range<Int>] {
        var segments: [Range<Int>] = []
        var start = 0
        var seen: Set<FeedKey> = []
        for (index, feed) in feeds.enumerated() {
            if seen.contains(feed) {
                segments.append(start..<index)
                start = index
                seen = []
            }
            seen.insert(feed)
        }
        if start < feeds.count { segments.append(start..<feeds.count) }
        return segments
    }

    /// Whether a hand-off leases a planned row to its owner in the publish's transaction: the row
    /// is due at once and goes by a transport the hand-off names (its owner's lanes with room).
    /// - Parameters:
    ///   - dueAt: when the planned row is due.
    ///   - transport: the transport the row goes by.
    ///   - handOff: the publish's hand-off (`nil`: none, nothing is leased).
    ///   - now: the publish's time.
    public static func handsOff(dueAt: Date, transport: TransportID, to handOff: HandOff?, at now: Date) -> Bool {
        guard let handOff, dueAt <= now else { return false }
        return handOff.transports.contains(transport)
    }

    /// Whether a planned row is written through the tap upsert (merging into its endpoint's
    /// waiting tap if there is one) rather than inserted as a new row: a tap that is not handed
    /// off (it may merge into a waiting tap now or later), or a handed-off tap whose endpoint has
    /// a waiting tap (it merges, then the merged tap is leased). A handed-off tap to an endpoint
    /// without a waiting tap is inserted leased, as are the other kinds.
    /// - Parameters:
    ///   - coalesces: the row is a tap (``PlannedDelivery/coalesces``).
    ///   - handedOff: ``handsOff(dueAt:transport:to:at:)`` of the row.
    ///   - tapWaits: its endpoint has a pending, unleased tap.
    public static func mergesOnWrite(coalesces: Bool, handedOff: Bool, tapWaits: Bool) -> Bool {
        coalesces && (tapWaits || !handedOff)
    }

    // MARK: Claiming and leases

    /// Whether a pending row is claimable at `now`: not parked, due, and not leased or with a
    /// lease that ended before `now` (a crashed or slow owner's rows are taken over).
    /// ``claimableSQL(_:now:)`` is the same condition in SQL.
    /// - Parameters:
    ///   - suspended: the row is parked (``Phase/suspended``).
    ///   - dueAt: when it is due.
    ///   - leaseOwner: who leased it (`nil`: nobody).
    ///   - leaseUntil: when its lease ends.
    ///   - now: the claim's time.
    public static func isClaimable(
        suspended: Bool, dueAt: Date, leaseOwner: String?, leaseUntil: Date?, at now: Date
    ) -> Bool {
        !suspended && dueAt <= now && (leaseOwner == nil || leaseUntil.map { $0 < now } ?? false)
    }

    /// ``isClaimable(suspended:dueAt:leaseOwner:leaseUntil:at:)`` of a pending row as an SQL
    /// condition.
    /// - Parameters:
    ///   - column: a column of the row, as an expression.
    ///   - now: the claim's time, as an expression (a bound parameter; it appears twice).
    public static func claimableSQL(_ column: (Column) -> String, now: String) -> String {
        """
        \(unparkedSQL(column)) AND \(column(.dueAt)) <= \(now) \
        AND (\(column(.leaseOwner)) IS NULL OR \(column(.leaseUntil)) < \(now))
        """
    }

    /// When a pending row that is not parked becomes claimable, as an SQL expression: its due
    /// time, or for a leased one the later of its due time and its lease's end (see
    /// ``isClaimable(suspended:dueAt:leaseOwner:leaseUntil:at:)``); what a store's
    /// ``OutboxStore/nextDueDate()`` takes the least of.
    /// - Parameters:
    ///   - column: a column of the row, as an expression.
    ///   - greatest: the dialect's two-argument maximum (`MAX`, `GREATEST`).
    public static func claimableFromSQL(_ column: (Column) -> String, greatest: String) -> String {
        let (dueAt, leaseUntil) = (column(.dueAt), column(.leaseUntil))
        return """
            CASE WHEN \(column(.leaseOwner)) IS NULL THEN \(dueAt) \
            ELSE \(greatest)(\(dueAt), COALESCE(\(leaseUntil), \(dueAt))) END
            """
    }

    /// Which pending rows are not parked, as an SQL condition (those
    /// ``claimableFromSQL(_:greatest:)`` speaks of).
    /// - Parameter column: a column of the row, as an expression.
    public static func unparkedSQL(_ column: (Column) -> String) -> String {
        "\(column(.state)) = 'pending' AND \(column(.suspendedAt)) IS NULL"
    }

    /// The order claims take rows in: higher urgency first (``urgency(_:)``), then the earlier
    /// due time, then the row created first (lower ID; see ``creationOrder(_:)``). Rows whose
    /// lease ended come before every other (``isClaimed(_:takenOver:before:takenOver:)``); this is
    /// the order within each of the two.
    public static let claimOrder: [(column: Column, descending: Bool)] = [
        (.urgency, true), (.dueAt, false), (.id, false),
    ]

    /// ``claimOrder`` as an SQL `ORDER BY` list.
    /// - Parameter column: a column of the row, as an expression.
    public static func claimOrderSQL(_ column: (Column) -> String) -> String {
        claimOrder.map { "\(column($0.column))\($0.descending ? " DESC" : "")" }.joined(separator: ", ")
    }

    /// Whether a claim takes `a` before `b`, each with whether its lease ended (a take-over).
    ///
    /// A delivery whose lease ended goes first: it was taken from the outbox once already, by an
    /// instance that died or stalled, and its user has waited at least a lease for it. Without
    /// that, an instance busy with a backlog of its own would reach a dead instance's deliveries
    /// only after the whole backlog. Then ``claimOrder``. Stores claim the rows whose lease ended
    /// first (``takenOverSQL(_:now:)``, through an index of leased rows), then the waiting ones
    /// (``waitingSQL(_:now:)``) for what is left of the limit.
    /// - Parameters:
    ///   - a: a due delivery.
    ///   - aTakenOver: whether a claim takes `a` over from an ended lease.
    ///   - b: another.
    ///   - bTakenOver: likewise for `b`.
    public static func isClaimed(
        _ a: Delivery, takenOver aTakenOver: Bool, before b: Delivery, takenOver bTakenOver: Bool
    ) -> Bool {
        if aTakenOver != bTakenOver { return aTakenOver }
        return isClaimed(a, before: b)
    }

    /// The claimable rows whose lease ended, as an SQL condition (the first part of
    /// ``claimableSQL(_:now:)``; see ``isClaimed(_:takenOver:before:takenOver:)``).
    /// - Parameters:
    ///   - column: a column of the row, as an expression.
    ///   - now: the claim's time, as an expression (it appears twice).
    public static func takenOverSQL(_ column: (Column) -> String, now: String) -> String {
        """
        \(unparkedSQL(column)) AND \(column(.dueAt)) <= \(now) \
        AND \(column(.leaseOwner)) IS NOT NULL AND \(column(.leaseUntil)) < \(now)
        """
    }

    /// The claimable rows nobody leased, as an SQL condition (the other part of
    /// ``claimableSQL(_:now:)``).
    /// - Parameters:
    ///   - column: a column of the row, as an expression.
    ///   - now: the claim's time, as an expression.
    public static func waitingSQL(_ column: (Column) -> String, now: String) -> String {
        "\(unparkedSQL(column)) AND \(column(.dueAt)) <= \(now) AND \(column(.leaseOwner)) IS NULL"
    }

    /// Whether a claim takes `a` before `b` (``claimOrder``).
    /// - Parameters:
    ///   - a: a claimed delivery.
    ///   - b: another.
    public static func isClaimed(_ a: Delivery, before b: Delivery) -> Bool {
        func earlier<T: Comparable>(_ x: T, _ y: T, _ descending: Bool) -> Bool? {
            x == y ? nil : (x < y) != descending
        }
        for (column, descending) in claimOrder {
            let first: Bool? =
                switch column {
                case .urgency: earlier(urgency(a.priority), urgency(b.priority), descending)
                case .dueAt: earlier(a.dueAt, b.dueAt, descending)
                default: earlier(a.id, b.id, descending)
                }
            if let first { return first }
        }
        return false
    }

    /// The attempts a row has once leased (claimed or handed off): one more than before; the
    /// attempt is counted when the row is leased, not when its outcome comes.
    /// - Parameter attempts: its attempts before.
    public static func attempts(afterLease attempts: Int) -> Int { attempts + 1 }

    /// The attempts a row has once released unsent (``OutboxOutcome/Change/release(dueAt:)``):
    /// the lease's attempt taken back, never below zero.
    /// - Parameter attempts: its attempts while leased.
    public static func attempts(afterRelease attempts: Int) -> Int { max(0, attempts - 1) }

    /// Leasing a row (a claim or a hand-off) as the `SET` list of an SQL `UPDATE`: its owner, the
    /// lease's end, the claim's time, and ``attempts(afterLease:)``.
    /// - Parameters:
    ///   - target: a column's name as the left side of an assignment.
    ///   - current: a column of the row updated, as an expression.
    ///   - owner: the instance taking the lease, as an expression.
    ///   - until: the lease's end, as an expression.
    ///   - now: the claim's time, as an expression.
    public static func leaseSQL(
        target: (Column) -> String, current: (Column) -> String, owner: String, until: String, now: String
    ) -> String {
        """
        \(target(.leaseOwner)) = \(owner), \(target(.leaseUntil)) = \(until), \(target(.claimedAt)) = \(now), \
        \(target(.attempts)) = \(current(.attempts)) + 1
        """
    }

    /// Releasing a row unsent as an SQL expression of its attempts (``attempts(afterRelease:)``).
    /// - Parameters:
    ///   - current: a column of the row updated, as an expression.
    ///   - greatest: the dialect's two-argument maximum (`MAX`, `GREATEST`).
    public static func releasedAttemptsSQL(current: (Column) -> String, greatest: String) -> String {
        "\(greatest)(0, \(current(.attempts)) - 1)"
    }

    /// Which rows a renewal of `owner`'s leases extends, as an SQL condition: pending rows it
    /// still leases (a row finished, put back or taken over meanwhile is left alone).
    /// - Parameters:
    ///   - column: a column of the row, as an expression.
    ///   - owner: the renewing instance, as an expression.
    public static func renewableSQL(_ column: (Column) -> String, owner: String) -> String {
        "\(column(.state)) = 'pending' AND \(column(.leaseOwner)) = \(owner)"
    }

    // MARK: Purging

    /// Whether the sweep purges a finished row: it finished before `purgeBefore` (the retention's
    /// cut) and its notification is gone or expired before the cut (a receipt outlives its
    /// notification by the retention). ``purgeableSQL(_:before:notificationExpiringFrom:)`` is
    /// the same condition in SQL.
    /// - Parameters:
    ///   - finishedAt: when the row finished (`nil`: pending, never purged).
    ///   - notificationExpiry: its notification's expiry (`nil`: the notification is gone).
    ///   - purgeBefore: the retention's cut.
    public static func isPurged(finishedAt: Date?, notificationExpiry: Date?, before purgeBefore: Date) -> Bool {
        guard let finishedAt, finishedAt < purgeBefore else { return false }
        return notificationExpiry.map { $0 < purgeBefore } ?? true
    }

    /// ``isPurged(finishedAt:notificationExpiry:before:)`` as an SQL condition.
    /// - Parameters:
    ///   - column: a column of the delivery row, as an expression.
    ///   - purgeBefore: the retention's cut, as an expression.
    ///   - notificationExpiringFrom: the store's subquery that selects the row's notification if
    ///     its expiry is at or after the expression it is given.
    public static func purgeableSQL(
        _ column: (Column) -> String, before purgeBefore: String, notificationExpiringFrom: (String) -> String
    ) -> String {
        """
        \(column(.state)) = 'finished' AND \(column(.finishedAt)) < \(purgeBefore) \
        AND NOT EXISTS (\(notificationExpiringFrom(purgeBefore)))
        """
    }
}
