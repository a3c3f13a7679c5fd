import AsyncHTTPClient
import Foundation
import HubEmulators
import HubTesting
import NIOCore
import Testing

/// `hub serve` with `delivery.badge: unread` and APNs, FCM, WNS and Web Push pointed at their
/// emulators: a user with an iPhone, an Android phone, a Windows PC and a browser reads on one
/// device over HTTP, and the badges the other devices' emulators received drop to the right
/// count, silently; a burst of 50 reads sends a few badge updates per device, not 50.
@Suite("hub serve: badges from the hub's read state, over HTTP and the emulators", .serialized)
struct BadgeServeTests {
    /// The hub with one app that shows the hub's badge.
    static func start() async throws -> FourPlatformHub {
        try await FourPlatformHub.start(appSettings: "delivery: { badge: unread }")
    }

    @Test("a read on one device drops the other three badges within a second, silently; its own is not pushed")
    func readOnOneDevice() async throws {
        let devices = try await Self.start()
        // Three notifications, one visible (every platform), one for phones only.
        for id in ["n-1", "n-2"] { #expect(try await devices.http.publish(user: "alice", id: id) == 201) }
        let phones = try await devices.http.request(
            .POST, "/v1/apps/notes.contoso.com/users/alice/notifications", bearer: devices.http.publisherKey,
            json:
                #"{"appNotificationId":"n-3","payload":{"rawContent":"3"},"targetPolicy":{"platformTypes":["ios","android"]}}"#
        )
        #expect(phones.status == 201, "\(phones.body)")
        #expect(try await devices.settled(), "\(devices.hub.log)")
        #expect(
            devices.iphone.badge == 3 && devices.pixel.badge == 3,
            "phones count n-3: \(devices.apns.requests.map(\.payload).map { String(decoding: $0, as: UTF8.self) }) \(devices.fcm.messages.map(\.data))"
        )
        #expect(devices.surface == "2" && devices.browser.badge == 2, "Windows and the web do not")

        // Read n-1 on the Android phone: the others drop by one, within a second.
        let before = devices.counts
        let started = ContinuousClock.now
        let own = try await devices.read("n-1", from: "pixel")
        #expect(own == 2, "the reading device gets its own badge in the answer (n-2 and n-3 left)")
        let dropped = await eventually(timeout: .seconds(5)) {
            devices.iphone.badge == 2 && devices.surface == "1" && devices.browser.badge == 1
        }
        let elapsed = ContinuousClock.now - started
        #expect(dropped, "\(devices.iphone) \(String(describing: devices.surface)) \(devices.browser)")
        #expect(elapsed < .seconds(1), "the badges dropped after \(elapsed)")
        print("badges of the other three devices dropped \(elapsed) after the read")
        #expect(try await devices.settled())
        #expect(devices.iphone.silent && devices.browser.silent, "no alert on iOS, a tap to the browser")
        let apnsUpdate = try #require(devices.apns.requests.last)
        #expect(apnsUpdate.status == 200 && apnsUpdate.header("apns-priority") == "5")
        #expect(devices.wns.received(on: devices.channel).suffix(2).map(\.type) == ["wns/badge", "wns/raw"])
        #expect(devices.counts[1] == before[1], "the reading device is not pushed back")

        // Read n-3 on the iPhone: the Android phone's badge drops to what it now counts.
        #expect(try await devices.read("n-3", from: "iphone") == 1, "n-2 left on iOS")
        #expect(await eventually { devices.pixel.badge == 1 }, "\(devices.pixel)")
        #expect(devices.pixel.silent, "a data message: nothing shown")
        #expect(try await devices.settled())
        #expect(devices.surface == "1" && devices.browser.badge == 1, "n-3 never counted on Windows or the web")
        await devices.shutdown()
    }

    @Test("a burst of 50 reads sends at most a few badge updates per device, ending at the right count")
    func burstOfReads() async throws {
        let devices = try await Self.start()
        let items = (1...51).map { #"{"userId":"alice","appNotificationId":"b-\#($0)","payload":{"rawContent":"x"}}"# }
        let batch = try await devices.http.request(
            .POST, "/v1/apps/notes.contoso.com/notifications/batch", bearer: devices.http.publisherKey,
            json: #"{"notifications":[\#(items.joined(separator: ","))]}"#)
        #expect((200..<300).contains(batch.status), "\(batch.body)")
        #expect(try await devices.settled(), "\(devices.hub.log)")
        #expect(devices.iphone.badge == 51 && devices.surface == "51" && devices.browser.badge == 51)

        let before = devices.counts
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 1...50 {
                group.addTask { try await devices.read("b-\(index)", from: "pixel") }
            }
            try await group.waitForAll()
        }
        #expect(
            await eventually { devices.iphone.badge == 1 && devices.surface == "1" && devices.browser.badge == 1 },
            "\(devices.iphone) \(String(describing: devices.surface)) \(devices.browser)")
        #expect(try await devices.settled())
        let updates = zip(devices.counts, before).map { $0 - $1 }
        #expect(updates[1] == 0, "the reading device is not pushed")
        for (device, count) in zip(["iphone", "surface", "browser"], [updates[0], updates[2], updates[3]]) {
            #expect((1...5).contains(count), "\(device) got \(count) badge updates for 50 reads")
        }
        print("badge updates for a burst of 50 reads (iphone, pixel, surface, browser): \(updates)")
        await devices.shutdown()
    }
}

extension FourPlatformHub {
    /// The badge the iPhone shows: `aps.badge` of the newest APNs push, with whether that push
    /// showed nothing else (no alert, no sound).
    var iphone: (badge: Int?, silent: Bool) {
        guard let request = apns.requests.last,
            let root = try? JSONSerialization.jsonObject(with: Data(request.payload)) as? [String: Any],
            let aps = root["aps"] as? [String: Any]
        else { return (nil, false) }
        return ((aps["badge"] as? NSNumber)?.intValue, aps["alert"] == nil && aps["sound"] == nil)
    }

    /// The badge the Android app applies: the `badge` data field of the newest FCM message,
    /// with whether it was a data message (nothing shown).
    var pixel: (badge: Int?, silent: Bool) {
        guard let message = fcm.messages.last else { return (nil, false) }
        return (message.data["badge"].flatMap(Int.init), message.notificationTitle == nil)
    }

    /// The newest `wns/badge` value on the Windows channel, and whether a toast came after the
    /// first badge update.
    var surface: String? {
        wns.received(on: channel).last { $0.type == "wns/badge" }.flatMap { notification in
            notification.text.split(separator: "\"").dropFirst().first.map(String.init)
        }
    }

    /// The badge the browser's service worker sets: the newest push's `badge` field, with
    /// whether it was a tap (the worker shows nothing for it).
    var browser: (badge: Int?, silent: Bool) {
        guard let message = push.received(by: subscription).last,
            let fields = try? JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: String]
        else { return (nil, false) }
        return (fields["badge"].flatMap(Int.init), fields["hub"] == "tap")
    }

    /// How many pushes each device got so far: APNs requests, FCM messages, WNS badges, Web Push messages.
    var counts: [Int] {
        [
            apns.requests.count, fcm.messages.count,
            wns.received(on: channel).filter { $0.type == "wns/badge" }.count,
            push.received(by: subscription).count,
        ]
    }

    /// Marks `id` read from the device `endpoint`.
    /// - Returns: the badge the hub answered for that device (`X-Hub-Badge`).
    @discardableResult
    func read(_ id: String, from endpoint: String) async throws -> Int? {
        var request = HTTPClientRequest(url: http.base + "/v1/apps/notes.contoso.com/me/notifications/\(id)")
        request.method = .PATCH
        request.headers.add(name: "Authorization", value: "Bearer \(try await http.userToken("alice"))")
        request.headers.add(name: "X-Hub-Endpoint", value: endpoint)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"readState":"read"}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect(response.status.code == 200, "\(String(buffer: body))")
        return response.headers.first(name: "X-Hub-Badge").flatMap { Int($0) }
    }

    /// Waits until every delivery is finished.
    func settled() async throws -> Bool {
        try await eventually { try await http.statistics().pending == 0 }
    }
}
