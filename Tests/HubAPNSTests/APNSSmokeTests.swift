import Foundation
import HubCore
import HubEmulators
import Testing

@testable import HubAPNS

@Suite("APNs transport: a shoulder tap and an alert reach the emulator")
struct APNSSmokeTests {
    @Test("a background push is accepted and recorded with its headers and payload")
    func backgroundPush() async throws {
        try await APNSHarness.with { harness in
            let outcome = await harness.send(APNSHarness.token(1))
            #expect(
                outcome == .accepted,
                "\(harness.emulator.requests.map { "\($0.status) \($0.reason ?? "") \($0.note ?? "")" })")
            let request = try #require(harness.emulator.requests(to: APNSHarness.token(1)).first)
            #expect(request.header("apns-push-type") == "background")
            #expect(request.header("apns-priority") == "5")
            #expect(request.json?["aps"]?["content-available"] == .integer(1))
        }
    }

    @Test("a burst of 1,000 sends with 32 in flight is all accepted")
    func burst() async throws {
        try await APNSHarness.with { harness in
            let started = ContinuousClock.now
            let accepted = await withTaskGroup(of: Int.self) { group in
                for worker in 0..<32 {
                    group.addTask {
                        var accepted = 0
                        for index in stride(from: worker, to: 1000, by: 32)
                        where await harness.send(APNSHarness.token(index)) == .accepted {
                            accepted += 1
                        }
                        return accepted
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(accepted == 1000)
            print("1,000 sends in \(ContinuousClock.now - started), \(harness.emulator.statistics)")
        }
    }
}
