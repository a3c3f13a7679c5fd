import HubCore
import Testing

@testable import HubEmulators
@testable import HubWNS

@Suite("WNS: status codes map to outcomes, with WNS's headers kept in the reason")
struct WNSOutcomeTests {
    @Test("404 (unknown channel) and 410 (expired channel) make the endpoint gone")
    func goneChannels() async throws {
        try await WNSFixture.with { fixture in
            let removed = fixture.channel()
            let expired = fixture.channel()
            fixture.emulator.removeChannel(removed)
            fixture.emulator.expireChannel(expired)
            let notFound = await fixture.transport.send(fixture.outbound(channelURI: removed))
            let gone = await fixture.transport.send(fixture.outbound(channelURI: expired))
            #expect(notFound.isGone && notFound.reason.hasPrefix("404"))
            #expect(gone.isGone && gone.reason.hasPrefix("410"))
            #expect(gone.reason.contains("X-WNS-Msg-ID: ") && gone.reason.contains("X-WNS-Error-Description: "))
            #expect(gone.reason.contains("X-WNS-Status: dropped"))
        }
    }

    @Test("406 retries after Retry-After; 500 and 503 retry")
    func retries() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            fixture.emulator.failNextSends(1, status: 406, retryAfter: 30)
            let throttled = await fixture.transport.send(fixture.outbound(channelURI: channel))
            #expect(throttled.retryDelay == .some(.seconds(30)))
            fixture.emulator.failNextSends(1, status: 500)
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)).retryDelay == .some(nil))
            fixture.emulator.failNextSends(1, status: 503, retryAfter: 5)
            #expect(
                await fixture.transport.send(fixture.outbound(channelURI: channel)).retryDelay == .some(.seconds(5)))
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted)
        }
    }

    @Test("400 and 413 are rejected; 403 (a channel of another app: the credentials are not its app's) is suspended")
    func rejections() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            for status in [400, 413] {
                fixture.emulator.failNextSends(1, status: status)
                let outcome = await fixture.transport.send(fixture.outbound(channelURI: channel))
                #expect(outcome.isRejected && outcome.reason.hasPrefix(String(status)))
            }
            let foreign = fixture.emulator.makeChannel(forApp: "ms-app://s-1-15-2-999")
            let outcome = await fixture.transport.send(fixture.outbound(channelURI: foreign))
            #expect(outcome.isSuspended && outcome.reason.hasPrefix("403"), "got \(outcome)")
            #expect(outcome.reason.contains("do not own this channel"))
        }
    }

    @Test("401 again with a newly issued access token is suspended, and logged once per app")
    func unauthorizedTwice() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            fixture.emulator.failNextSends(2, status: 401)
            let outcome = await fixture.transport.send(fixture.outbound(channelURI: channel))
            #expect(outcome.isSuspended && outcome.reason.hasPrefix("401"), "got \(outcome)")
            #expect(fixture.emulator.tokenRequests == 2, "one new access token before giving up")
            #expect(fixture.emulator.received.isEmpty)
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted)
        }
    }

    @Test("200 with X-WNS-Status channelthrottled is a retry for that channel")
    func channelThrottled() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            fixture.emulator.throttleChannel(channel)
            let outcome = await fixture.transport.send(fixture.outbound(channelURI: channel))
            #expect(outcome.retryDelay != nil && outcome.reason.contains("channelthrottled"))
        }
    }

    @Test("the emulator's request checks: type, content type, XML, tags, TTL")
    func emulatorChecks() {
        func request(_ headers: [(String, String)], _ body: String) -> EmulatorRequest {
            EmulatorRequest(
                method: "POST", path: "/channels/x", query: nil,
                headers: (headers + [("content-length", String(body.utf8.count))]).map { ($0.0.lowercased(), $0.1) },
                body: Array(body.utf8), version: "HTTP/1.1")
        }
        let toast = [("x-wns-type", "wns/toast"), ("content-type", "text/xml")]
        #expect(WNSEmulator.problem(request(toast, "<toast><visual/></toast>")) == nil)
        #expect(WNSEmulator.problem(request(toast, "<toast><text>a & b</text></toast>"))?.status == 400)
        #expect(WNSEmulator.problem(request(toast, "<toast><text>a < b</text></toast>"))?.status == 400)
        #expect(WNSEmulator.problem(request(toast, "<tile/>"))?.description.contains("<toast>") == true)
        #expect(
            WNSEmulator.problem(request([("x-wns-type", "wns/raw"), ("content-type", "text/xml")], "x"))?.status == 400)
        #expect(
            WNSEmulator.problem(request([("x-wns-type", "wns/bogus"), ("content-type", "text/xml")], "x"))?.status
                == 400)
        #expect(WNSEmulator.problem(request(toast + [("x-wns-tag", "seventeen-chars-x")], "<toast/>"))?.status == 400)
        #expect(WNSEmulator.problem(request(toast + [("x-wns-ttl", "soon")], "<toast/>"))?.status == 400)
        let big = String(repeating: "x", count: 5001)
        #expect(
            WNSEmulator.problem(
                request([("x-wns-type", "wns/raw"), ("content-type", "application/octet-stream")], big))?.status == 413)
    }
}
