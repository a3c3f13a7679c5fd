import Testing

@testable import HubServer

@Suite("Rate limiter")
struct RateLimiterTests {
    let key = RateLimiter.Key(kind: .deviceToken, app: "a.example.com", subject: "t1")

    @Test("a bucket gives its burst, then says how long until the next token, and refills over its period")
    func bucket() {
        let limiter = RateLimiter()
        let limit = RateLimit(3, per: .seconds(3))
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(limiter.take(key, limit: limit, now: start) == nil) }
        let wait = limiter.take(key, limit: limit, now: start)
        #expect(wait == .seconds(1))
        #expect(limiter.hasToken(key, limit: limit, now: start + .milliseconds(500)) != nil)
        #expect(limiter.take(key, limit: limit, now: start + .seconds(1)) == nil)
        #expect(limiter.take(key, limit: limit, now: start + .seconds(1)) != nil)
        // Other keys have their own buckets.
        let other = RateLimiter.Key(kind: .deviceToken, app: "a.example.com", subject: "t2")
        #expect(limiter.take(other, limit: limit, now: start) == nil)
    }

    @Test("memory stays bounded: refilled buckets are dropped, and at most `capacity` are kept")
    func bounded() {
        let limiter = RateLimiter(capacity: 20_000)
        let limit = RateLimit(10, per: .seconds(1))
        var now = ContinuousClock.now
        for index in 0..<100_000 {
            // A second passes every 1,000 clients: older buckets have refilled.
            if index % 1000 == 0 { now += .seconds(1) }
            let key = RateLimiter.Key(kind: .clientIP, app: "", subject: "10.0.\(index / 256).\(index % 256)")
            _ = limiter.take(key, limit: limit, now: now)
        }
        #expect(limiter.bucketCount <= 20_000, "\(limiter.bucketCount)")
        // All at once (none refilled): the least recently used half goes.
        for index in 0..<50_000 {
            let key = RateLimiter.Key(kind: .clientIP, app: "", subject: "x\(index)")
            _ = limiter.take(key, limit: limit, now: now)
        }
        #expect(limiter.bucketCount <= 30_000, "\(limiter.bucketCount)")
    }
}
