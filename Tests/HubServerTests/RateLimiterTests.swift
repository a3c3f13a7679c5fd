import HubTesting
import Testing

@testable import HubServer

@Suite("Rate limiter")
struct RateLimiterTests {
    let key = RateLimiter.Key(kind: .deviceToken, app: "a.example.com", subject: "t1")

    @Test("a bucket gives its burst, then says how long until the next token, and refills over its period")
    func bucket() {
        let clock = ManualClock()
        let limiter = RateLimiter(clock: clock)
        let limit = RateLimit(3, per: .seconds(3))
        for _ in 0..<3 { #expect(limiter.take(key, limit: limit) == nil) }
        let wait = limiter.take(key, limit: limit)
        #expect(wait == .seconds(1))
        clock.advance(by: .milliseconds(500))
        #expect(limiter.hasToken(key, limit: limit) != nil)
        clock.advance(by: .milliseconds(500))
        #expect(limiter.take(key, limit: limit) == nil)
        #expect(limiter.take(key, limit: limit) != nil)
        // Other keys have their own buckets.
        let other = RateLimiter.Key(kind: .deviceToken, app: "a.example.com", subject: "t2")
        #expect(limiter.take(other, limit: limit) == nil)
    }

    @Test("memory stays bounded: refilled buckets are dropped, and at most `capacity` are kept")
    func bounded() {
        let clock = ManualClock()
        let limiter = RateLimiter(capacity: 20_000, clock: clock)
        let limit = RateLimit(10, per: .seconds(1))
        for index in 0..<100_000 {
            // A second passes every 1,000 clients: older buckets have refilled.
            if index % 1000 == 0 { clock.advance(by: .seconds(1)) }
            let key = RateLimiter.Key(kind: .clientIP, app: "", subject: "10.0.\(index / 256).\(index % 256)")
            _ = limiter.take(key, limit: limit)
        }
        #expect(limiter.bucketCount <= 20_000, "\(limiter.bucketCount)")
        // All at once (none refilled): the least recently used half goes.
        for index in 0..<50_000 {
            let key = RateLimiter.Key(kind: .clientIP, app: "", subject: "x\(index)")
            _ = limiter.take(key, limit: limit)
        }
        #expect(limiter.bucketCount <= 30_000, "\(limiter.bucketCount)")
    }
}
