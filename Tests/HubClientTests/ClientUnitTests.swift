import Foundation
import Testing

@testable import HubClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("HubClient parts")
struct ClientUnitTests {
    @Test("the event-stream parser handles chunks split anywhere, CRLF, comments and multi-line data")
    func eventStreamParser() {
        let stream =
            "retry: 3000\r\n\r\n: keepalive\r\n\r\nid: c1\r\nevent: notification\r\ndata: {\"a\":1}\r\n\r\n"
            + "id: c2\ndata: line one\ndata:line two\n\n: keepalive\n\nevent: other\ndata: x\n\n"
        let expected = [
            ServerSentEvent(id: "c1", type: "notification", data: #"{"a":1}"#),
            ServerSentEvent(id: "c2", type: nil, data: "line one\nline two"),
            ServerSentEvent(id: "c2", type: "other", data: "x"),
        ]
        let bytes = Array(stream.utf8)
        for chunkSize in [1, 2, 3, 7, 64, bytes.count] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            var start = 0
            while start < bytes.count {
                let end = min(start + chunkSize, bytes.count)
                events += parser.push(bytes[start..<end])
                start = end
            }
            #expect(events == expected, "chunks of \(chunkSize) bytes")
            #expect(parser.retry == 3000)
        }
    }

    @Test("the client's default session has no URL cache (a cache makes Foundation trap on a late cancel)")
    func uncachedSession() {
        #expect(HubClient.defaultSession.configuration.urlCache == nil)
        #expect(HubClient.defaultSession.configuration.requestCachePolicy == .reloadIgnoringLocalCacheData)
        #expect(HubClient.uncachedConfiguration().urlCache == nil)
    }

    @Test("problem details map to stable codes with field errors and Retry-After")
    func problemMapping() throws {
        let body = Data(
            #"{"type":"https://notificationhub.dev/problems/invalid-request","title":"Invalid request","status":400,"detail":"The request has 1 invalid field(s)","errors":[{"field":"appId","message":"unknown"}]}"#
                .utf8)
        let response = try #require(
            HTTPURLResponse(url: URL(string: "http://hub")!, statusCode: 400, httpVersion: nil, headerFields: nil))
        let error = Requester.error(status: 400, body: body, headers: response)
        #expect(error.code == .invalidRequest)
        #expect(error.title == "Invalid request")
        #expect(error.fieldErrors == [HubClientError.FieldError(field: "appId", message: "unknown")])

        let busy = try #require(
            HTTPURLResponse(
                url: URL(string: "http://hub")!, statusCode: 503, httpVersion: nil, headerFields: ["Retry-After": "7"]))
        let unavailable = Requester.error(status: 503, body: Data("not json".utf8), headers: busy)
        #expect(unavailable.code == .unavailable && unavailable.isTransient)
        #expect(unavailable.retryAfter == .seconds(7))
        // An HTTP date, read by the same RetryAfter as the hub's transports (a date in the past: 0).
        let dated = try #require(
            HTTPURLResponse(
                url: URL(string: "http://hub")!, statusCode: 503, httpVersion: nil,
                headerFields: ["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"]))
        #expect(Requester.error(status: 503, body: Data(), headers: dated).retryAfter == .seconds(0))
        #expect(HubClientError.code(status: 502, problemType: nil) == .server)
        #expect(
            HubClientError.code(status: 400, problemType: "https://notificationhub.dev/problems/invalid-cursor")
                == .invalidCursor)
    }

    @Test("request URLs percent-encode the app, path segments and query values")
    func requestURLs() async throws {
        let requester = Requester(
            baseURL: URL(string: "https://hub.example.com/base/")!, app: "notes.contoso.com", session: .shared,
            tokens: TokenCache { _ in "t" })
        var request = HubRequest(method: "GET", path: ["me", "notifications", "a b/c"])
        request.query = [("cursor", "x+y=z"), ("limit", "5")]
        #expect(
            requester.url(request).absoluteString
                == "https://hub.example.com/base/v1/apps/notes.contoso.com/me/notifications/a%20b%2Fc?cursor=x%2By%3Dz&limit=5"
        )
    }

    @Test("shoulder taps are recognised by their hub key, as APNs, FCM and WNS carry it")
    func shoulderTaps() {
        let apns = ShoulderTap(userInfo: ["aps": ["content-available": 1], "hub": ["app": "a.example", "v": 42]])
        #expect(apns?.app == "a.example" && apns?.changeVersion == 42)
        let fcm = ShoulderTap(userInfo: ["hub": "tap", "app": "b.example", "v": "7"])
        #expect(fcm?.app == "b.example" && fcm?.changeVersion == 7)
        #expect(ShoulderTap(userInfo: ["hub": #"{"appId":"c.example"}"#])?.app == "c.example")
        #expect(ShoulderTap(userInfo: ["hub": 1]) != nil)
        #expect(ShoulderTap(userInfo: ["hub": [AnyHashable("app"): "d.example"]])?.app == "d.example")
        #expect(ShoulderTap(userInfo: ["aps": ["alert": "hello"]]) == nil)
    }

    @Test("a tap's badge: APNs aps.badge (a number), FCM's and Web Push's badge field (text); none without one")
    func shoulderTapBadges() {
        let apns = ShoulderTap(userInfo: ["aps": ["badge": 3, "content-available": 1], "hub": ["app": "a.example"]])
        #expect(apns?.badge == 3)
        #expect(ShoulderTap(userInfo: ["hub": "tap", "app": "b.example", "v": "7", "badge": "12"])?.badge == 12)
        #expect(ShoulderTap(userInfo: ["hub": "tap", "badge": "0"])?.badge == 0, "0 clears the badge")
        #expect(ShoulderTap(userInfo: ["hub": "tap", "badge": "-2"])?.badge == 0, "never below zero")
        #expect(ShoulderTap(userInfo: ["hub": "tap", "badge": "many"])?.badge == nil)
        #expect(ShoulderTap(userInfo: ["aps": ["content-available": 1], "hub": ["app": "a.example"]])?.badge == nil)
    }

    @Test("the file storage keeps values across instances and removes keys, in a 0600 file of a 0700 folder")
    func fileStorage() throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("hubclient-\(UUID().uuidString)/state.json")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let storage = FileHubClientStorage(url: url)
        #expect(storage.data(forKey: "k") == nil)
        try storage.setData(Data("v1".utf8), forKey: "k")
        try storage.setData(Data("w".utf8), forKey: "other")
        #expect(FileHubClientStorage(url: url).data(forKey: "k") == Data("v1".utf8))
        try storage.setData(nil, forKey: "k")
        #expect(FileHubClientStorage(url: url).data(forKey: "k") == nil)
        #expect(FileHubClientStorage(url: url).data(forKey: "other") == Data("w".utf8))
        let file = try FileManager.default.attributesOfItem(atPath: url.path)
        let folder = try FileManager.default.attributesOfItem(atPath: url.deletingLastPathComponent().path)
        #expect((file[.posixPermissions] as? NSNumber)?.intValue == 0o600, "only the user reads the state")
        #expect((folder[.posixPermissions] as? NSNumber)?.intValue == 0o700)
    }

    @Test("a client generates its endpoint ID once and reads it back from storage")
    func endpointIDPersists() {
        let storage = InMemoryHubClientStorage()
        let make = {
            HubClient(baseURL: URL(string: "http://127.0.0.1:1")!, app: "a.example", storage: storage) { _ in "" }
        }
        let first = make()
        #expect(first.endpointID.range(of: "^[a-z0-9-]{36}$", options: .regularExpression) != nil)
        #expect(make().endpointID == first.endpointID)
        let otherApp = HubClient(baseURL: URL(string: "http://127.0.0.1:1")!, app: "b.example", storage: storage) { _ in
            ""
        }
        #expect(otherApp.endpointID != first.endpointID)
    }

    @Test("an APNs registration sends the device token as lowercase hex")
    func apnsToken() {
        let registration = EndpointRegistration.apns(
            appId: "com.contoso.notes", deviceToken: Data([0x00, 0x0f, 0xa0, 0xff]), environment: .production)
        #expect(registration.token == "000fa0ff")
        #expect(registration.transport == .apns && registration.platform == .ios)
    }
}
