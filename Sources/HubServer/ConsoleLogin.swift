import Foundation
import HTTPTypes
import HubCore
import Hummingbird
import Logging

/// Signing in to the console with the admin token, and signing out.
///
/// - `GET /console/login`: the form (one password field, labelled; works with Tab and Enter).
/// - `POST /console/login`: compares the token with the admin token in constant time; right, a
///   session cookie and 303 to the page asked for (`next`, a console path only); wrong, the form
///   again with 401 and an error, and a log line without the token.
/// - `POST /console/logout`: with the session's CSRF token, clears the cookie.
enum ConsoleLogin {
    static func addRoutes(to router: RouterGroup<HubRequestContext>, console: Console) {
        router.get("login") { request, _ in
            guard console.sessions != nil else { return Console.off }
            let next = request.uri.queryParameters["next"].map(String.init).flatMap(safeNext)
            return form(next: next, error: nil, status: .ok)
        }
        router.post("login") { request, context in
            guard let sessions = console.sessions, let adminToken = console.api.configuration.adminToken else {
                return Console.off
            }
            guard ConsoleForm.isSameOrigin(request) else {
                context.logger.warning("console sign-in refused: cross-origin")
                return Console.forbidden("The sign-in form came from another site.")
            }
            var request = request
            let form = try await ConsoleForm.read(&request, maxBytes: 16 * 1024)
            let next = form["next"].flatMap(safeNext)
            guard let token = form["token"], adminToken.constantTimeEquals(token) else {
                // Never the token, not even its length: only that a sign-in failed, and from where.
                context.logger.warning(
                    "console sign-in failed: wrong admin token",
                    metadata: ["client": "\(context.remoteAddress?.ipAddress ?? "?")"])
                return Self.form(next: next, error: "That is not the admin token of this hub.", status: .unauthorized)
            }
            let session = sessions.newSession(now: console.hub.now())
            context.logger.notice(
                "console sign-in", metadata: ["client": "\(context.remoteAddress?.ipAddress ?? "?")"])
            var headers: HTTPFields = [.location: next ?? ConsolePaths.root]
            headers[.setCookie] = cookie(
                session.value, maxAge: Int(ConsoleSessionCodec.lifetime), secure: ConsoleForm.cameOverHTTPS(request))
            return Response(status: .seeOther, headers: headers)
        }
        console.checkedForm(router, "logout") { _, _, _ in
            var headers: HTTPFields = [.location: ConsolePaths.login]
            headers[.setCookie] = cookie("", maxAge: 0, secure: false)
            return Response(status: .seeOther, headers: headers)
        }
    }

    /// The `Set-Cookie` value of the session cookie; `maxAge` 0 clears it.
    static func cookie(_ value: String, maxAge: Int, secure: Bool) -> String {
        var cookie =
            "\(ConsoleSessionCodec.cookieName)=\(value); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
        if secure { cookie += "; Secure" }
        return cookie
    }

    /// `next` when it is a console page of this hub (`/console…`, no scheme, no `//`, no `\`, no
    /// dot segment such as `/console/../v1`), so the sign-in page never sends anyone elsewhere.
    static func safeNext(_ next: String) -> String? {
        guard next == ConsolePaths.root || next.hasPrefix(ConsolePaths.root + "/") || next.hasPrefix("/console?"),
            !next.contains("//"), !next.contains("\\"), !next.contains("/."), !next.hasPrefix(ConsolePaths.login),
            next.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value != 0x7F })
        else { return nil }
        return next
    }

    /// The sign-in page.
    static func form(next: String?, error: String?, status: HTTPResponse.Status) -> Response {
        let message: HTML = error.map { ConsoleLayout.notice("<p>\($0)</p>", kind: "error", role: "alert") } ?? .empty
        let nextField: HTML = next.map { "<input type=\"hidden\" name=\"next\" value=\"\($0)\">" } ?? .empty
        let describedBy = error == nil ? "token-hint" : "token-hint token-error"
        let invalid: HTML = error == nil ? .empty : " aria-invalid=\"true\""
        return ConsoleLayout.document(
            title: "Sign in",
            body: """
                <main id="main" class="login card">
                <h1>Sign in to the console</h1>
                \(message)
                <form class="stacked" method="post" action="\(ConsolePaths.login)">
                \(nextField)
                <div><label for="token">Admin token</label>
                <input id="token" name="token" type="password" autocomplete="current-password" required autofocus \
                aria-describedby="\(describedBy)"\(invalid)>
                <p class="hint" id="token-hint">The hub's <code>server.adminToken</code>.</p>\
                \(error == nil ? HTML.empty : "<p class=\"field-error\" id=\"token-error\">Wrong admin token.</p>")</div>
                <button type="submit">Sign in</button>
                </form>
                </main>
                """,
            status: status)
    }
}
