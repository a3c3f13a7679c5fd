import Foundation
import HTTPTypes
import HubCore
import HubTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@testable import HubServer

/// The console's sign-in, session cookie, CSRF and headers, through HTTP.
@Suite("Console: sign-in, session and CSRF")
struct ConsoleAuthTests {
    @Test("pages without a session answer 303 to the sign-in page and show no data")
    func noSession() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            for path in [
                "/console", "/console/apps/\(Harness.notes)", "/console/apps/\(Harness.notes)/endpoints",
                "/console/apps/\(Harness.notes)/send", "/console/config",
            ] {
                let response = try await client.send(.get, path)
                #expect(response.status == .seeOther, "\(path)")
                #expect(response.headers[.location]?.hasPrefix("/console/login?next=") == true, "\(path)")
                #expect(response.text.isEmpty, "\(path): \(response.text)")
                #expect(response.headers[.cacheControl] == "no-store")
            }
            // The admin token as a bearer does not open the console: only the session cookie does.
            let bearer = try await client.send(.get, "/console", bearer: Harness.adminToken)
            #expect(bearer.status == .seeOther)
        }
    }

    @Test("the sign-in form: labelled password field; a wrong token gets 401, the form again and no cookie")
    func wrongToken() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let form = try await client.send(.get, "/console/login?next=%2Fconsole%2Fconfig")
            #expect(form.status == .ok)
            #expect(form.headers[.contentType] == "text/html; charset=utf-8")
            #expect(form.text.contains(#"<label for="token">Admin token</label>"#))
            #expect(form.text.contains(#"type="password""#))
            #expect(form.text.contains(#"name="next" value="/console/config""#))
            #expect(form.text.contains(#"<meta name="viewport""#))

            for token in ["admin-9c2d7e4f1c", "", Harness.notesKey] {
                let response = try await Self.signIn(client, token: token)
                #expect(response.status == .unauthorized)
                #expect(response.headers[.setCookie] == nil)
                #expect(response.text.contains("That is not the admin token of this hub."))
                #expect(!response.text.contains("Contoso Notes"))
                #expect(!response.text.contains(token.isEmpty ? "\u{0}" : token), "the token must not be echoed")
            }
        }
    }

    @Test("signing in sets an HttpOnly, SameSite=Strict cookie for /console (Secure only behind HTTPS)")
    func cookieAttributes() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let response = try await Self.signIn(client, token: Harness.adminToken, next: "/console/config")
            #expect(response.status == .seeOther)
            #expect(response.headers[.location] == "/console/config")
            let cookie = try #require(response.headers[.setCookie])
            let attributes = Set(
                cookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes.contains("HttpOnly"))
            #expect(attributes.contains("SameSite=Strict"))
            #expect(attributes.contains("Path=/console"))
            #expect(attributes.contains("Max-Age=43200"))
            #expect(!attributes.contains("Secure"), "plain HTTP: a Secure cookie would be dropped")
            #expect(!cookie.contains(Harness.adminToken))

            let proxied = try await Self.signIn(
                client, token: Harness.adminToken, headers: [HTTPField.Name("X-Forwarded-Proto")!: "https"])
            #expect(proxied.headers[.setCookie]?.hasSuffix("; Secure") == true)

            // `next` never leads out of the console.
            for next in ["https://evil.example/", "//evil.example/console", "/v1/apps", "/console/../v1"] {
                let elsewhere = try await Self.signIn(client, token: Harness.adminToken, next: next)
                #expect(elsewhere.headers[.location] == "/console", "\(next)")
            }
        }
    }

    @Test("a signed-in page has the security headers; a tampered, expired or foreign cookie shows no data")
    func sessionChecks() async throws {
        let clock = ManualClock()
        let harness = try await Harness(clock: clock)
        let other = try await Harness(adminToken: "another-admin-token-42")
        let foreignCookie = try await other.run { client in
            try await Self.session(client, token: "another-admin-token-42")
        }
        try await harness.run { client in
            let cookie = try await Self.session(client)
            let page = try await client.send(.get, "/console", headers: [.cookie: cookie])
            #expect(page.status == .ok)
            #expect(page.text.contains("Contoso Notes"))
            #expect(page.headers[.cacheControl] == "no-store")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(policy.contains("default-src 'none'"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(policy.contains("script-src 'none'"), "no page loads a script")
            #expect(!policy.contains("unsafe-inline"))
            #expect(page.headers[.xContentTypeOptions] == "nosniff")
            #expect(page.headers[HTTPField.Name("Referrer-Policy")!] == "same-origin")
            #expect(!page.text.contains("<script"), "the console needs no script")

            var tampered = Array(cookie)
            let last = tampered.count - 3
            tampered[last] = tampered[last] == "A" ? "B" : "A"
            let value = cookie.dropFirst("hub_console=".count)
            let parts = value.split(separator: ".")
            let stretched = "hub_console=v1.\(Int(parts[1])! + 86_400).\(parts[2]).\(parts[3])"
            for bad in [String(tampered), stretched, foreignCookie, "hub_console=", "hub_console=v1.1.2.3", "other=1"] {
                let response = try await client.send(.get, "/console/apps/\(Harness.notes)", headers: [.cookie: bad])
                #expect(response.status == .seeOther, "\(bad)")
                #expect(!response.text.contains("Contoso Notes"), "\(bad)")
            }

            clock.advance(by: .seconds(12 * 3600 + 1))
            let expired = try await client.send(.get, "/console", headers: [.cookie: cookie])
            #expect(expired.status == .seeOther)
            #expect(expired.text.isEmpty)
        }
    }

    @Test("a form without its session's CSRF token, or from another origin, gets 403 and publishes nothing")
    func csrf() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let cookie = try await Self.session(client)
            let second = try await Self.session(client)
            let sendPath = "/console/apps/\(Harness.notes)/send"
            let csrf = try await Self.csrfToken(client, cookie: cookie, path: sendPath)
            let otherCSRF = try await Self.csrfToken(client, cookie: second, path: sendPath)
            #expect(csrf != otherCSRF)
            let fields = "user=alice&title=Hello&body=&priority=none&mode=visible"
            let refused: [(String, HTTPFields)] = [
                (fields, [.cookie: cookie]),
                (fields + "&csrf=", [.cookie: cookie]),
                (fields + "&csrf=AAAA" + csrf.dropFirst(4), [.cookie: cookie]),
                (fields + "&csrf=" + otherCSRF, [.cookie: cookie]),
                (fields + "&csrf=" + csrf, [.cookie: cookie, .origin: "https://evil.example"]),
                (fields + "&csrf=" + csrf, [.cookie: cookie, .origin: "null"]),
            ]
            for (body, headers) in refused {
                let response = try await Self.post(client, sendPath, body: body, headers: headers)
                #expect(response.status == .forbidden, "\(body) \(headers)")
                #expect(!response.text.contains("Sent"))
            }
            // Without a session the form is not even read.
            let anonymous = try await Self.post(client, sendPath, body: fields + "&csrf=" + csrf)
            #expect(anonymous.status == .seeOther)
            #expect(try await harness.hub.history(app: Harness.notes, user: "alice").isEmpty)

            let sent = try await Self.post(
                client, sendPath, body: fields + "&csrf=" + csrf, headers: [.cookie: cookie])
            #expect(sent.status == .ok, "\(sent.text)")
            #expect(try await harness.hub.history(app: Harness.notes, user: "alice").count == 1)

            // Signing out needs the token too, and clears the cookie.
            let noToken = try await Self.post(client, "/console/logout", body: "", headers: [.cookie: cookie])
            #expect(noToken.status == .forbidden)
            let out = try await Self.post(client, "/console/logout", body: "csrf=" + csrf, headers: [.cookie: cookie])
            #expect(out.status == .seeOther)
            #expect(out.headers[.setCookie]?.hasPrefix("hub_console=; Path=/console; Max-Age=0") == true)
        }
    }

    @Test("without an admin token the console is off: 404 saying so, no sign-in")
    func off() async throws {
        let harness = try await Harness(adminToken: nil)
        try await harness.run { client in
            for path in ["/console", "/console/login", "/console/config"] {
                let response = try await client.send(.get, path)
                #expect(response.status == .notFound, "\(path)")
                #expect(response.text.contains("The console is off"))
            }
            let signIn = try await Self.signIn(client, token: "")
            #expect(signIn.status == .notFound)
            #expect(signIn.headers[.setCookie] == nil)
        }
    }

    @Test("Origin: absent, or the hub's own scheme, host and port pass; any other is refused")
    func sameOrigin() {
        func request(_ origin: String?, authority: String = "hub.example:8080", forwardedHost: String? = nil) -> Request
        {
            var head = HTTPRequest(method: .post, scheme: nil, authority: authority, path: "/console/logout")
            if let origin { head.headerFields[.origin] = origin }
            if let forwardedHost { head.headerFields[HTTPField.Name("X-Forwarded-Host")!] = forwardedHost }
            return Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        }
        #expect(ConsoleForm.isSameOrigin(request(nil)))
        #expect(ConsoleForm.isSameOrigin(request("http://hub.example:8080")))
        #expect(ConsoleForm.isSameOrigin(request("http://HUB.example:8080")))
        #expect(ConsoleForm.isSameOrigin(request("http://hub.example", authority: "hub.example")))
        #expect(
            ConsoleForm.isSameOrigin(
                request("https://hub.example", authority: "10.0.0.5:8080", forwardedHost: "hub.example")))
        #expect(!ConsoleForm.isSameOrigin(request("http://hub.example:8081")))
        #expect(!ConsoleForm.isSameOrigin(request("http://evil.example:8080")))
        #expect(!ConsoleForm.isSameOrigin(request("null")))
        #expect(!ConsoleForm.isSameOrigin(request("https://hub.example:8080.evil.example")))
    }

    // MARK: Helpers

    static func post(
        _ client: some TestClientProtocol, _ path: String, body: String, headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = headers
        headers[.contentType] = "application/x-www-form-urlencoded"
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func signIn(
        _ client: some TestClientProtocol, token: String, next: String? = nil, headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var body = "token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        if let next { body += "&next=" + (next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }
        return try await post(client, "/console/login", body: body, headers: headers)
    }

    /// Signs in; returns the `Cookie` header value of the session.
    static func session(_ client: some TestClientProtocol, token: String = Harness.adminToken) async throws -> String {
        let response = try await signIn(client, token: token)
        let setCookie = try #require(response.headers[.setCookie])
        return String(setCookie.prefix { $0 != ";" })
    }

    /// The CSRF token in the page at `path`.
    static func csrfToken(_ client: some TestClientProtocol, cookie: String, path: String) async throws -> String {
        let page = try await client.send(.get, path, headers: [.cookie: cookie])
        let marker = #"name="csrf" value=""#
        let start = try #require(page.text.range(of: marker), "\(page.text)")
        return String(page.text[start.upperBound...].prefix { $0 != "\"" })
    }
}
