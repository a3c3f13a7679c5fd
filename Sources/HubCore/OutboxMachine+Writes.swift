public import struct Foundation.Date

// What an outcome writes to a delivery row, once: the columns a finish, a put-back, a suspension
// or a release sets, and which row is its endpoint's waiting tap. Stores render these tables as
// the `SET` lists and conditions of their statements (their column names, bound values and
// dialect); they never list the columns themselves.
extension OutboxMachine {
    // MARK: The waiting tap

    /// Whether a row is its endpoint's waiting tap: pending, a tap, and not leased. At most one
    /// per endpoint (a unique index on this condition); a planned tap merges into it
    /// (``tapMerge``), a tap put back while it waits is superseded by it (``putBack(kind:newerTapWaits:)``).
    /// - Parameters:
    ///   - pending: the row is pending (not finished).
    ///   - kind: its kind.
    ///   - leaseOwner: who leased it (`nil`: nobody).
    public static func isWaitingTap(pending: Bool, kind: DeliveryKind, leaseOwner: String?) -> Bool {
        pending && kind == .shoulderTap && leaseOwner == nil
    }

    /// ``isWaitingTap(pending:kind:leaseOwner:)`` as an SQL condition (with unqualified columns,
    /// the predicate of the stores' unique partial index and of their `ON CONFLICT` targets).
    /// - Parameter column: a column of the row, as an expression.
    public static func waitingTapSQL(_ column: (Column) -> String) -> String {
        """
        \(column(.state)) = 'pending' AND \(column(.kind)) = '\(DeliveryKind.shoulderTap.rawValue)' \
        AND \(column(.leaseOwner)) IS NULL
        """
    }

    // MARK: Row writes

    /// What an outcome does to the row it speaks of (or to the rows it ends besides).
    public enum RowWrite: Sendable, Hashable {
        /// A provider answered (delivered, rejected, given up, endpoint gone): finished with the
        /// given result and detail, lease cleared, the send noted (``noteSent``).
        case answered
        /// Finished without a send of its own (superseded at a claim, or because its endpoint
        /// became inactive): finished with the given result and detail, lease cleared.
        case closed
        /// A tap put back while a newer tap to its endpoint waits (``PutBack/supersedes``):
        /// finished with the given result and detail (``supersededByNewerTap``), the given error
        /// (if any) as its last error; the send noted when it was sent (`false`: released unsent).
        case supersededByNewerTap(sent: Bool)
        /// A retry, or a lease its owner took back when it restarted (``OutboxStore/releaseLeases(owner:)``):
        /// it waits again, lease cleared, due at the given time and with the given error (each
        /// kept when none is given), the send noted.
        case retried
        /// A suspension: as ``retried``, and parked (``Phase/suspended``) since the given time
        /// with the given error as its reason.
        case suspended
        /// Put back unsent (``OutboxOutcome/Change/release(dueAt:)``): it waits again, lease
        /// cleared, due at the given time, ``attempts(afterRelease:)``; its last error is kept.
        case released
    }

    /// A value an outcome gives (a store binds it).
    public enum Given: String, Sendable, Hashable, CaseIterable {
        /// The ``DeliveryResult`` a finish records.
        case result
        /// The detail a finish records (may be `nil`).
        case detail
        /// The outcome's time.
        case at
        /// When the row is due again (`nil`: it keeps its due time).
        case dueAt
        /// The error of a retry or the reason of a suspension (`nil`: the row keeps its last error).
        case error
        /// The provider's message ID (`nil`: the row keeps the one it has).
        case messageId
    }

    /// The values an outcome gives its row write (``Given``); what a store binds.
    public struct GivenValues: Sendable, Hashable {
        /// ``Given/result``.
        public var result: DeliveryResult?
        /// ``Given/detail``.
        public var detail: String?
        /// ``Given/at``.
        public var at: Date
        /// ``Given/dueAt``.
        public var dueAt: Date?
        /// ``Given/error``.
        public var error: String?
        /// ``Given/messageId``.
        public var messageId: String?

        /// - Parameters:
        ///   - result: the result a finish records.
        ///   - detail: the detail a finish records.
        ///   - at: the outcome's time.
        ///   - dueAt: when the row is due again (`nil`: it keeps its due time).
        ///   - error: the error or suspension reason (`nil`: the row keeps its last error).
        ///   - messageId: the provider's message ID (`nil`: the row keeps its own).
        public init(
            result: DeliveryResult? = nil, detail: String? = nil, at: Date, dueAt: Date? = nil, error: String? = nil,
            messageId: String? = nil
        ) {
            self.result = result
            self.detail = detail
            self.at = at
            self.dueAt = dueAt
            self.error = error
            self.messageId = messageId
        }
    }

    /// The write a claimed row put back as `write` gets once ``putBack(kind:newerTapWaits:)``
    /// decided `decision`: `write` itself when it waits again, else
    /// ``RowWrite/supersededByNewerTap(sent:)`` with ``supersededByNewerTap``'s result and detail
    /// (sent unless it was released unsent).
    /// - Parameters:
    ///   - write: ``waitingAgain(_:)`` of the outcome.
    ///   - given: the outcome's values.
    ///   - decision: what ``putBack(kind:newerTapWaits:)`` decided.
    public static func putBackWrite(
        _ write: RowWrite, _ given: GivenValues, _ decision: PutBack
    ) -> (write: RowWrite, given: GivenValues) {
        guard decision == .supersedes else { return (write, given) }
        var given = given
        given.result = supersededByNewerTap.result
        given.detail = supersededByNewerTap.detail
        return (.supersededByNewerTap(sent: write != .released), given)
    }

    /// How a write decides one column.
    public enum Value: Sendable, Hashable {
        /// Cleared (`NULL`).
        case cleared
        /// `'finished'` (of ``Column/state``).
        case finished
        /// The given value.
        case given(Given)
        /// The given value, or the row's own when none is given.
        case givenOrKept(Given)
        /// The row's own value, or the value of another of its columns when it has none.
        case keptOr(Column)
        /// ``attempts(afterRelease:)`` of the row's attempts.
        case releasedAttempts
    }

    /// The columns every finish sets: finished with the given result and detail at the given
    /// time, lease cleared.
    public static let finishing: [(column: Column, value: Value)] = [
        (.state, .finished), (.result, .given(.result)), (.detail, .given(.detail)), (.finishedAt, .given(.at)),
        (.leaseOwner, .cleared), (.leaseUntil, .cleared),
    ]

    /// What an outcome of a send notes for the receipt: the first lease's time (``Column/claimedAt``
    /// moves with every claim) and the provider's message ID of the latest answer that had one.
    public static let noteSent: [(column: Column, value: Value)] = [
        (.firstSentAt, .keptOr(.claimedAt)), (.providerMessageId, .givenOrKept(.messageId)),
    ]

    /// The columns every put-back that waits again sets: lease cleared.
    public static let unleasing: [(column: Column, value: Value)] = [(.leaseOwner, .cleared), (.leaseUntil, .cleared)]

    /// The columns `write` sets, each with its value.
    /// - Parameter write: what the outcome does to the row.
    public static func columns(_ write: RowWrite) -> [(column: Column, value: Value)] {
        switch write {
        case .answered: finishing + noteSent
        case .closed: finishing
        case .supersededByNewerTap(let sent): finishing + [(.lastError, .givenOrKept(.error))] + (sent ? noteSent : [])
        case .retried: unleasing + [(.dueAt, .givenOrKept(.dueAt)), (.lastError, .givenOrKept(.error))] + noteSent
        case .suspended:
            columns(.retried) + [(.suspendedAt, .given(.at)), (.suspendedReason, .given(.error))]
        case .released: unleasing + [(.dueAt, .given(.dueAt)), (.attempts, .releasedAttempts)]
        }
    }

    /// ``columns(_:)`` of `write` as the `SET` list of an SQL `UPDATE`: how a store renders it.
    /// - Parameters:
    ///   - write: what the outcome does to the row.
    ///   - target: a column's name as the left side of an assignment.
    ///   - current: a column of the row updated, as an expression.
    ///   - given: a given value, as an expression (a bound parameter or a column of a row of them).
    ///   - greatest: the dialect's two-argument maximum (`MAX`, `GREATEST`).
    public static func setList(
        _ write: RowWrite, target: (Column) -> String, current: (Column) -> String, given: (Given) -> String,
        greatest: String
    ) -> String {
        columns(write).map { column, value in
            let expression =
                switch value {
                case .cleared: "NULL"
                case .finished: "'finished'"
                case .given(let input): given(input)
                case .givenOrKept(let input): "COALESCE(\(given(input)), \(current(column)))"
                case .keptOr(let other): "COALESCE(\(current(column)), \(current(other)))"
                case .releasedAttempts: releasedAttemptsSQL(current: current, greatest: greatest)
                }
            return "\(target(column)) = \(expression)"
        }
        .joined(separator: ", ")
    }

    /// The row write of an outcome put back (``putBack(kind:newerTapWaits:)``) when it waits again.
    /// - Parameter change: a retry, suspension or release (a finish never waits again).
    public static func waitingAgain(_ change: OutboxOutcome.Change) -> RowWrite {
        switch change {
        case .suspend: .suspended
        case .release: .released
        case .retry, .finish: .retried
        }
    }
}
