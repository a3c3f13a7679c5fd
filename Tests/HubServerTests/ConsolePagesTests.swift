import Foundation
import HTTPTypes
import HubCore
import HubTesting
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HubServer

/// The console's pages, signed in, through HTTP: what each shows, and that every value from
/// configuration, devices or providers arrives escaped.
@Suite("Console: pages")
struct ConsolePagesTests {
    static let hostileApp = CrossDeviceApp(
        id: "<script>alert('app')</script>", name: "<img src=x onerror=alert(1)>",
        platforms: [.android: ["\"><b>id</b>"]], domain: DomainVerification(token: "hub-verify=<i>x</i>"),
        publishers: [Publisher(name: "<u>pub</u>", key: Secret("pk-hostile-0123456789"))])
    static let hostileUser = "<script>alert(\"user\")</script>"
    static let hostileReason = "</td><script>alert('reason')</script>"

    @Test("apps and an app's page: platforms, app IDs, credentials status, domain; no secret")
    func appsPages() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            let apps = try await client.send(.get, "/console", headers: [.cookie: cookie])
            #expect(apps.status == .ok)
            #expect(apps.text.contains(#"<a href="/console/apps/notes.contoso.com">Contoso Notes</a>"#))
            #expect(apps.text.contains("Fabrikam Tasks"))
            #expect(apps.text.contains("ios (1), android (1), web (1)"))
            #expect(apps.text.contains(##"<a class="skip-link" href="#main">"##))
            #expect(apps.text.contains(#"<main id="main""#))
            #expect(apps.text.contains(#"aria-current="page">Apps</a>"#))

            let app = try await client.send(.get, "/console/apps/\(Harness.notes)", headers: [.cookie: cookie])
            #expect(app.status == .ok)
            for expected in [
                "<h1>Contoso Notes</h1>", "com.contoso.notes", "https://notes.contoso.com", Harness.notesIssuer,
                "JWKS file", "backend", "No push credentials", "no token yet",
                #"<th scope="row">android</th>"#, #"<th scope="col">App IDs</th>"#,
            ] {
                #expect(app.text.contains(expected), "\(expected)")
            }
            for secret in [Harness.notesKey, Harness.tasksKey, Harness.tasksSecret, Harness.adminToken] {
                #expect(!apps.text.contains(secret))
                #expect(!app.text.contains(secret))
            }
            let unknown = try await client.send(.get, "/console/apps/nope.example", headers: [.cookie: cookie])
            #expect(unknown.status == .notFound)
            #expect(unknown.text.contains("No app &#39;nope.example&#39; is configured on this hub."))
        }
    }

    @Test("credentials: usable, not run by this hub, or refused (suspended deliveries with the reason)")
    func credentialStatus() async throws {
        let app = CrossDeviceApp(
            id: "creds.example", name: "Creds", platforms: [.android: ["com.example.creds"]],
            credentials: PushCredentials([FakeCredentials.recording, FakeCredentials.absent]))
        let harness = try await Harness(extraApps: [app])
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            let before = try await client.send(.get, "/console/apps/creds.example", headers: [.cookie: cookie])
            #expect(before.text.contains("recording credentials (env:REC)"), "\(before.text)")
            #expect(before.text.contains(#"<span class="status status-ok">usable</span>"#))
            #expect(before.text.contains("this hub does not run the absent transport"))

            _ = try await harness.hub.registerEndpoint(
                app: "creds.example", user: "alice", id: "phone",
                EndpointRegistration(
                    platform: .android, appId: "com.example.creds", transport: TransportID("recording"),
                    token: "misconfigured-1"))
            _ = try await harness.hub.publish(
                app: "creds.example", user: "alice",
                NotificationDraft(appNotificationId: "n1", payload: NotificationPayload(rawContent: "x")))
            #expect(
                await eventually {
                    (try? await harness.hub.deliveryStatistics().suspended.isEmpty) == false
                })
            let after = try await client.send(.get, "/console/apps/creds.example", headers: [.cookie: cookie])
            #expect(after.text.contains(#"<span class="status status-error">refused</span>"#), "\(after.text)")
            #expect(after.text.contains("InvalidProviderToken: check keyId, teamId and privateKey"))
        }
    }

    @Test("endpoints by state: the inactive list with reasons and since-dates; no push token")
    func endpointsPage() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            for (id, token) in [("good", "tok-live-secret"), ("gone", "dead")] {
                try await client.registerRecording(id, token: token, bearer: alice)
            }
            _ = try await client.publish(#"{"appNotificationId":"n1","payload":{"rawContent":"x"}}"#, user: "alice")
            #expect(
                await eventually {
                    (try? await harness.hub.appEndpoints(app: Harness.notes, state: .inactive).count) == 1
                })
            let cookie = try await ConsoleAuthTests.session(client)
            let base = "/console/apps/\(Harness.notes)/endpoints"
            let active = try await client.send(.get, base, headers: [.cookie: cookie])
            #expect(active.status == .ok)
            #expect(active.text.contains("<h1>Endpoints: active</h1>"))
            #expect(active.text.contains(#"<th scope="row"><span class="id" title="good">good</span></th>"#))
            #expect(!active.text.contains(">gone<"))
            #expect(active.text.contains("Active (1)") && active.text.contains("Inactive (1)"))
            #expect(!active.text.contains("tok-live-secret"), "push tokens are never shown")

            let inactive = try await client.send(.get, base + "?state=inactive", headers: [.cookie: cookie])
            #expect(inactive.text.contains(#"<th scope="row"><span class="id" title="gone">gone</span></th>"#))
            #expect(inactive.text.contains("<td>Unregistered</td>"))
            #expect(inactive.text.contains("<time datetime="))
            #expect(!inactive.text.contains(">good<"))
        }
    }

    @Test("test send: publishes with the API's validation; shows the ID and status, or errors by their fields")
    func testSend() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            _ = try await client.send(
                .put, "/v1/apps/\(Harness.notes)/me/endpoints/tablet", bearer: alice,
                json: #"{"platform":"android","appId":"com.contoso.notes","transport":"polling"}"#)
            let cookie = try await ConsoleAuthTests.session(client)
            let path = "/console/apps/\(Harness.notes)/send"
            let form = try await client.send(.get, path, headers: [.cookie: cookie])
            for label in ["user", "title", "body", "priority", "mode"] {
                #expect(form.text.contains(#"<label for="\#(label)">"#), "\(label)")
                #expect(form.text.contains(#"id="\#(label)" name="\#(label)""#), "\(label)")
            }
            let csrf = try await ConsoleAuthTests.csrfToken(client, cookie: cookie, path: path)

            let refused = try await ConsoleAuthTests.post(
                client, path, body: "user=&title=&body=b&priority=urgent&mode=visible&csrf=\(csrf)",
                headers: [.cookie: cookie])
            #expect(refused.status == .badRequest)
            #expect(refused.text.contains(#"<p class="field-error" id="user-error">"#), "\(refused.text)")
            #expect(refused.text.contains(#"<p class="field-error" id="title-error">is required"#))
            #expect(
                refused.text.contains(#"<p class="field-error" id="priority-error">must be one of none, low, high"#))
            #expect(refused.text.contains(#"aria-describedby="title-error" aria-invalid="true""#))
            #expect(try await harness.hub.history(app: Harness.notes, user: "alice").isEmpty)

            let sent = try await ConsoleAuthTests.post(
                client, path,
                body: "user=alice&title=Hello+there&body=From+the+console&priority=high&mode=visible&csrf=\(csrf)",
                headers: [.cookie: cookie])
            #expect(sent.status == .ok)
            let history = try await harness.hub.history(app: Harness.notes, user: "alice")
            let notification = try #require(history.first)
            #expect(notification.payload.visualContent?.title == "Hello there")
            #expect(notification.payload.visualContent?.body == "From the console")
            #expect(notification.priority == .high)
            #expect(sent.text.contains(#"<dd class="mono" id="sent-id">\#(notification.id)</dd>"#))
            #expect(sent.text.contains(#"<dd id="sent-status">active</dd>"#))
            #expect(sent.text.contains("Goes to 1 active endpoint(s)"))
        }
    }

    @Test("hostile app names, app IDs, user IDs and reasons arrive as text")
    func escaping() async throws {
        let harness = try await Harness(extraApps: [Self.hostileApp])
        let now = Date()
        _ = try await harness.hub.store.upsertEndpoint(
            Endpoint(
                id: "dead-1", appId: Self.hostileApp.id, userId: Self.hostileUser, platform: .android,
                platformAppId: "\"><b>id</b>", transport: .polling, state: .inactive,
                inactiveReason: Self.hostileReason, inactiveSince: now, registeredAt: now))
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            let appPath = ConsolePaths.app(Self.hostileApp.id)
            var pages = [
                try await client.send(.get, "/console", headers: [.cookie: cookie]),
                try await client.send(.get, appPath, headers: [.cookie: cookie]),
                try await client.send(.get, appPath + "/endpoints?state=inactive", headers: [.cookie: cookie]),
            ]
            let csrf = try await ConsoleAuthTests.csrfToken(client, cookie: cookie, path: appPath + "/send")
            let user = try #require(Self.hostileUser.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            pages.append(
                try await ConsoleAuthTests.post(
                    client, appPath + "/send",
                    body: "user=\(user)&title=%3Cscript%3E&priority=none&mode=visible&csrf=\(csrf)",
                    headers: [.cookie: cookie]))
            for page in pages {
                #expect(page.status == .ok, "\(page.text)")
                #expect(!page.text.contains("<script"), "\(page.text)")
                #expect(!page.text.contains("<img"))
                #expect(!page.text.contains("<b>id"))
                #expect(!page.text.contains("<u>pub"))
                #expect(!page.text.contains("<i>x"))
            }
            #expect(pages[0].text.contains("&lt;img src=x onerror=alert(1)&gt;"))
            #expect(pages[1].text.contains("&lt;script&gt;alert(&#39;app&#39;)&lt;/script&gt;"))
            #expect(pages[2].text.contains("&lt;/td&gt;&lt;script&gt;alert(&#39;reason&#39;)&lt;/script&gt;"))
            #expect(pages[2].text.contains("&lt;script&gt;alert(&quot;user&quot;)&lt;/script&gt;"))
            #expect(pages[3].text.contains(#"value="&lt;script&gt;alert(&quot;user&quot;)&lt;/script&gt;""#))
        }
    }

    @Test("the configuration page shows the report's checks with their status")
    func configPage() async throws {
        var harness = try await Harness()
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            let none = try await client.send(.get, "/console/config", headers: [.cookie: cookie])
            #expect(none.text.contains("without a configuration report"))
        }
        harness = try await Harness()
        let report = ConsoleConfigReport(
            source: "/etc/hub/hub.yaml",
            checks: [
                .init(.ok, "/etc/hub/hub.yaml", "loads: 2 app(s)"),
                .init(.warning, "app notes.contoso.com domain", "not verified yet <now>"),
                .init(.error, "app x credentials.apns", "the key does not sign"),
            ])
        var configuration = harness.configuration
        configuration.configReport = { report }
        let router = buildRouter(
            hub: harness.hub, configuration: configuration, identity: harness.identity, metrics: nil)
        try await Application(router: router).test(.router) { client in
            let cookie = try await ConsoleAuthTests.session(client)
            let page = try await client.send(.get, "/console/config", headers: [.cookie: cookie])
            #expect(page.status == .ok)
            #expect(
                page.text.contains(
                    #"<span class="status status-error">error</span> <span class="mono">/etc/hub/hub.yaml</span>"#))
            #expect(page.text.contains("1 error, 1 warning, 1 ok"))
            #expect(
                page.text.contains(
                    #"<th scope="row" class="mono">app x credentials.apns</th><td>the key does not sign</td>"#))
            #expect(page.text.contains("not verified yet &lt;now&gt;"))
        }
    }
}

/// Credentials of the harness's `recording` transport, and of a transport the hub does not run.
struct FakeCredentials: TransportCredentials {
    static let transport = TransportID("recording")
    var summary: String { "recording credentials (env:REC)" }
    static let recording = FakeCredentials()
    static let absent = AbsentCredentials()

    struct AbsentCredentials: TransportCredentials {
        static let transport = TransportID("absent")
        var summary: String { "absent credentials" }
    }
}
