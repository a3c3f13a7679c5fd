import Foundation
import HubHTTPSupport
import Synchronization
import Testing

@Suite("AccessTokenCache: single flight, renewal by the injected clock, invalidation, failures")
struct AccessTokenCacheTests {
    /// A wall clock the test moves; counts how often it was read.
    final class Clock: Sendable {
        private let state = Mutex((now: Date(timeIntervalSince1970: 1_700_000_000), reads: 0))
        var now: Date { state.withLock { $0.now } }
        var reads: Int { state.withLock { $0.reads } }
        func read() -> Date {
            state.withLock {
                $0.reads += 1
                return $0.now
            }
        }
        func advance(by seconds: TimeInterval) { state.withLock { $0.now.addTimeInterval(seconds) } }
    }

    /// Holds exchanges until opened.
    final class Gate: Sendable {
        private let state = Mutex((open: false, waiters: [CheckedContinuation<Void, Never>]()))
        func wait() async {
            await withCheckedContinuation { continuation in
                let resume = state.withLock { state in
                    if state.open { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if resume { continuation.resume() }
            }
        }
        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    struct Refused: Error, Equatable {}

    /// Counts exchanges; each returns `t<n>` valid for `lifetime` seconds from the clock's now.
    final class Exchanges: Sendable {
        let clock: Clock
        let lifetime: TimeInterval
        private let count = Mutex(0)
        init(clock: Clock, lifetime: TimeInterval = 100) {
            self.clock = clock
            self.lifetime = lifetime
        }
        var started: Int { count.withLock { $0 } }
        func next(gate: Gate? = nil, failing: Bool = false) -> AccessTokenCache<String>.Exchange {
            { [self] in
                let number = count.withLock {
                    $0 += 1
                    return $0
                }
                await gate?.wait()
                if failing { throw Refused() }
                return ("t\(number)", renewAt: clock.now.addingTimeInterval(lifetime))
            }
        }
    }

    @Test("50 concurrent callers with no token run one exchange and all get its token")
    func singleFlight() async throws {
        let clock = Clock()
        let cache = AccessTokenCache<String>(now: { clock.read() })
        let exchanges = Exchanges(clock: clock)
        let gate = Gate()
        let callers = 50
        async let tokens = withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<callers { group.addTask { try await cache.token(exchange: exchanges.next(gate: gate)) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        // Every caller has read the clock, i.e. is at or past the check for a token or an
        // exchange in flight, while the first exchange is still held.
        while clock.reads < callers { await Task.yield() }
        gate.open()
        let results = try await tokens
        #expect(results.count == callers && Set(results) == ["t1"])
        #expect(exchanges.started == 1)
        #expect(cache.exchangeCount == 1)
    }

    @Test("the token is handed out until its renewal time by the injected clock, then exchanged anew")
    func renewal() async throws {
        let clock = Clock()
        let cache = AccessTokenCache<String>(now: { clock.read() })
        let exchanges = Exchanges(clock: clock, lifetime: 100)
        #expect(cache.cached() == nil)
        #expect(try await cache.token(exchange: exchanges.next()) == "t1")
        clock.advance(by: 99)
        #expect(cache.cached() == "t1")
        #expect(try await cache.token(exchange: exchanges.next()) == "t1")
        #expect(exchanges.started == 1)
        clock.advance(by: 1)
        #expect(cache.cached() == nil, "due at its renewal time")
        #expect(cache.latest == "t1")
        #expect(try await cache.token(exchange: exchanges.next()) == "t2")
        #expect(cache.cached() == "t2")
        #expect(exchanges.started == 2 && cache.exchangeCount == 2)
    }

    @Test("invalidating the current token forces an exchange; a token already replaced is ignored")
    func invalidation() async throws {
        let clock = Clock()
        let cache = AccessTokenCache<String>(now: { clock.read() })
        let exchanges = Exchanges(clock: clock)
        let first = try await cache.token(exchange: exchanges.next())
        cache.invalidate("someone else's")
        #expect(cache.cached() == first)
        cache.invalidate(first)
        #expect(cache.cached() == nil && cache.latest == nil)
        let second = try await cache.token(exchange: exchanges.next())
        #expect(second == "t2")
        cache.invalidate(first)  // a late 401 for the old token
        #expect(cache.cached() == second)
        #expect(exchanges.started == 2)
    }

    @Test("a failed exchange fails every caller waiting on it and is not cached: the next call retries")
    func failureNotCached() async throws {
        let clock = Clock()
        let cache = AccessTokenCache<String>(now: { clock.read() })
        let exchanges = Exchanges(clock: clock)
        let gate = Gate()
        let callers = 10
        async let failures = withTaskGroup(of: Bool.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    do {
                        _ = try await cache.token(exchange: exchanges.next(gate: gate, failing: true))
                        return false
                    } catch {
                        return error is Refused
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        while clock.reads < callers { await Task.yield() }
        gate.open()
        #expect(await failures == Array(repeating: true, count: callers))
        #expect(exchanges.started == 1)
        #expect(cache.cached() == nil && cache.latest == nil && cache.exchangeCount == 0)
        #expect(try await cache.token(exchange: exchanges.next()) == "t2")
        #expect(exchanges.started == 2 && cache.exchangeCount == 1)
    }
}

@Suite("OAuthTokenRequest.Answer: when a granted token is renewed")
struct OAuthAnswerTests {
    let issued = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("expires_in less the margin; the default lifetime without expires_in; never more than half early")
    func renewAt() {
        var answer = OAuthTokenRequest.Answer(status: 200, accessToken: "a", expiresIn: 3600)
        #expect(answer.renewAt(issued: issued, defaultLifetime: 60, margin: .seconds(300)) == issued + 3300)
        answer.expiresIn = nil
        #expect(answer.renewAt(issued: issued, defaultLifetime: 86_400, margin: .seconds(300)) == issued + 86_100)
        answer.expiresIn = 400
        #expect(answer.renewAt(issued: issued, defaultLifetime: 60, margin: .seconds(300)) == issued + 200)
        #expect(OAuthTokenRequest.Answer(status: 503).isTransient && !OAuthTokenRequest.Answer(status: 400).isTransient)
    }
}
