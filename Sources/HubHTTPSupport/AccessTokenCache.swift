public import Foundation
public import Synchronization

/// Holds one credential's current access token: obtains it by an exchange, hands it out until its
/// renewal time, and runs at most one exchange at a time — concurrent callers that find no fresh
/// token await the same exchange.
///
/// The exchange itself (signing an assertion, an OAuth request, a JWT signature) belongs to the
/// caller; the cache decides only *when* one runs. A failed exchange is not remembered: every
/// caller waiting on it gets its error, and the next call starts a new one. Time comes from the
/// `now` it is given, so tests move it instead of waiting.
///
/// ```swift
/// let cache = AccessTokenCache<String>(now: configuration.now)
/// let token = try await cache.token {
///     let granted = try await exchange()
///     return (granted.value, renewAt: granted.expiry.addingTimeInterval(-60))
/// }
/// // The provider refused it (401): the next call exchanges anew.
/// cache.invalidate(token)
/// ```
public final class AccessTokenCache<Token: Sendable & Equatable>: Sendable {
    /// What an exchange returns: the token, and when to stop handing it out (before it expires).
    public typealias Exchange = @Sendable () async throws -> (token: Token, renewAt: Date)

    // Internal but usable from inlinable code: the per-request paths below are specialized in
    // the caller's module for its token type, instead of running generic code with metadata
    // lookups on every request (measured on APNs' send path: ~30 % of a token lookup).
    @usableFromInline
    struct Held {
        @usableFromInline var token: Token
        @usableFromInline var renewAt: Date

        @usableFromInline
        init(token: Token, renewAt: Date) {
            self.token = token
            self.renewAt = renewAt
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var current: Held?
        @usableFromInline var exchange: Task<Token, any Error>?
        @usableFromInline var exchanges = 0

        @usableFromInline
        init() {}
    }

    @usableFromInline
    enum Next {
        case ready(Token)
        case wait(Task<Token, any Error>)
    }

    @usableFromInline let now: @Sendable () -> Date
    @usableFromInline let state = Mutex(State())

    /// - Parameter now: the wall clock that renewal times are compared with.
    public init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    /// The token while it is fresh (before its renewal time), without waiting: the per-request
    /// fast path. `nil` when there is none or it is due for renewal.
    @inlinable
    public func cached() -> Token? {
        let time = now()
        return state.withLock { state in
            guard let current = state.current, time < current.renewAt else { return nil }
            return current.token
        }
    }

    /// The last token obtained, fresh or not, unless it was invalidated.
    public var latest: Token? { state.withLock { $0.current?.token } }

    /// How many exchanges have succeeded (for tests and diagnostics).
    public var exchangeCount: Int { state.withLock { $0.exchanges } }

    /// A fresh token: the cached one, else the result of the exchange in flight, else of a new
    /// exchange run with `exchange`.
    /// - Parameter exchange: obtains a new token; used only when no exchange is in flight.
    /// - Throws: what the exchange threw (every caller waiting on it gets the same error).
    @inlinable
    public func token(exchange: @escaping Exchange) async throws -> Token {
        let time = now()
        let next: Next = state.withLock { state in
            if let current = state.current, time < current.renewAt { return .ready(current.token) }
            if let running = state.exchange { return .wait(running) }
            // The task stores what it obtained itself, so a token is kept even when every caller
            // that waited for it was cancelled.
            let started = Task { [self] in
                do {
                    let fresh = try await exchange()
                    self.state.withLock { state in
                        state.current = Held(token: fresh.token, renewAt: fresh.renewAt)
                        state.exchange = nil
                        state.exchanges += 1
                    }
                    return fresh.token
                } catch {
                    self.state.withLock { $0.exchange = nil }
                    throw error
                }
            }
            state.exchange = started
            return .wait(started)
        }
        switch next {
        case .ready(let token): return token
        case .wait(let task): return try await task.value
        }
    }

    /// Forgets `token` after the provider refused it, so the next ``token(exchange:)`` runs a new
    /// exchange. A token already replaced by a newer one is left alone.
    public func invalidate(_ token: Token) {
        state.withLock { state in
            if state.current?.token == token { state.current = nil }
        }
    }
}
