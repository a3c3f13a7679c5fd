import Foundation
import HTTPTypes
import HubCore
import Hummingbird
import Logging
import NIOCore

/// The operator web console at `/console`: HTML rendered by the hub, behind the admin token.
///
/// - Signing in (`/console/login`) trades the admin token for a session cookie
///   (``ConsoleSessionCodec``: `HttpOnly`, `SameSite=Strict`, `Path=/console`, `Secure` behind
///   HTTPS). Pages without a valid session answer 303 to the sign-in page and show nothing.
/// - Every form that changes something carries the session's CSRF token; a POST without it, or
///   whose `Origin` is another site, gets 403 and changes nothing.
/// - Every answer is `Cache-Control: no-store` with a Content-Security-Policy that allows only the
///   hub's own stylesheet and no script at all (``ConsoleHeadersMiddleware``).
/// - Without an admin token the console is off: every path answers 404 saying so.
struct Console: Sendable {
    let api: HubAPI
    /// `nil`: no admin token, the console is off.
    let sessions: ConsoleSessionCodec?

    init(api: HubAPI) {
        self.api = api
        self.sessions = ConsoleSessionCodec(adminToken: api.configuration.adminToken)
    }

    var hub: Hub { api.hub }

    /// What a signed-in page handler gets.
    struct Visit: Sendable {
        let session: ConsoleSessionCodec.Session
        let csrfToken: String
    }

    /// A signed-in page at `path`: without a valid session, 303 to the sign-in page.
    func page(
        _ router: RouterGroup<HubRequestContext>, _ path: RouterPath,
        _ render: @escaping @Sendable (Request, HubRequestContext, Visit) async throws -> ConsoleView
    ) {
        router.get(path) { request, context in
            guard let sessions else { return Self.off }
            guard let visit = visit(request, sessions: sessions) else { return Self.toLogin(from: request) }
            return await respond(context: context, visit: visit) { try await render(request, context, visit) }
        }
    }

    /// A signed-in form at `path` that answers with a page.
    func form(
        _ router: RouterGroup<HubRequestContext>, _ path: RouterPath,
        _ handle: @escaping @Sendable (ConsoleForm, HubRequestContext, Visit) async throws -> ConsoleView
    ) {
        checkedForm(router, path) { form, context, visit in
            await respond(context: context, visit: visit) { try await handle(form, context, visit) }
        }
    }

    /// A signed-in form at `path`: the session, the `Origin` and the CSRF token are checked before
    /// `handle` sees the form; without a session, 303 to the sign-in page; otherwise 403.
    func checkedForm(
        _ router: RouterGroup<HubRequestContext>, _ path: RouterPath,
        _ handle: @escaping @Sendable (ConsoleForm, HubRequestContext, Visit) async throws -> Response
    ) {
        router.post(path) { request, context in
            guard let sessions else { return Self.off }
            guard let visit = visit(request, sessions: sessions) else { return Self.toLogin(from: nil) }
            guard ConsoleForm.isSameOrigin(request) else {
                context.logger.warning("console form refused: cross-origin", metadata: ["path": "\(request.uri.path)"])
                return Self.forbidden("The form came from another site.")
            }
            var request = request
            let form = try await ConsoleForm.read(&request, maxBytes: api.configuration.maxBodyBytes)
            guard let token = form["csrf"], sessions.isCSRFToken(token, of: visit.session) else {
                context.logger.warning("console form refused: CSRF token", metadata: ["path": "\(request.uri.path)"])
                return Self.forbidden("The form is stale or was not sent from this console. Open the page again.")
            }
            return try await handle(form, context, visit)
        }
    }

    private func visit(_ request: Request, sessions: ConsoleSessionCodec) -> Visit? {
        guard let cookie = request.cookies[ConsoleSessionCodec.cookieName]?.value,
            let session = sessions.session(fromCookie: cookie, now: hub.now())
        else { return nil }
        return Visit(session: session, csrfToken: sessions.csrfToken(for: session))
    }

    /// Renders `view`, or an error page for what it threw (a hub error as its message, anything
    /// else logged and answered with a page that reveals nothing).
    private func respond(
        context: HubRequestContext, visit: Visit, _ view: () async throws -> ConsoleView
    ) async -> Response {
        do {
            return ConsoleLayout.page(try await view(), csrfToken: visit.csrfToken)
        } catch let error as HubError {
            let problem = Problem(error)
            let page = ConsoleView(
                title: problem.kind.title, section: "", status: problem.kind.status,
                content: ConsoleLayout.notice("<p>\(error.message)</p>", kind: "error", role: "alert"))
            return ConsoleLayout.page(page, csrfToken: visit.csrfToken)
        } catch {
            context.logger.error("console page failed", metadata: ["error": "\(String(reflecting: error))"])
            let page = ConsoleView(
                title: "Something went wrong", section: "", status: .internalServerError,
                content: ConsoleLayout.notice(
                    "<p>The page could not be made; the server log has the details.</p>", kind: "error", role: "alert"))
            return ConsoleLayout.page(page, csrfToken: visit.csrfToken)
        }
    }

    // MARK: Answers without a session

    /// 303 to the sign-in page, which comes back to `request`'s page (a GET) afterwards.
    static func toLogin(from request: Request?) -> Response {
        var location = ConsolePaths.login
        if let request, let next = ConsoleLogin.safeNext(request.uri.description) {
            location += "?next=" + HTTPText.queryValue(next)
        }
        return Response(status: .seeOther, headers: [.location: location])
    }

    static func forbidden(_ message: String) -> Response {
        ConsoleLayout.document(
            title: "Forbidden",
            body: """
                <main id="main" class="login card"><h1>Forbidden</h1>\
                \(ConsoleLayout.notice("<p>\(message)</p>", kind: "error", role: "alert"))\
                <p><a href="\(ConsolePaths.root)">Back to the console</a></p></main>
                """,
            status: .forbidden)
    }

    /// The console without an admin token.
    static var off: Response {
        ConsoleLayout.document(
            title: "Console off",
            body: """
                <main id="main" class="login card"><h1>The console is off</h1>\
                <p>Set <code>server.adminToken</code> in hub.yaml (or <code>HUB_SERVER_ADMIN_TOKEN</code>) \
                and restart the hub to use it.</p></main>
                """,
            status: .notFound)
    }
}

extension HubAPI {
    /// The console's routes under `/console` (see ``Console``); each page lives in its own
    /// `ConsolePage+….swift` file.
    func addConsoleRoutes(to router: HubRouter) {
        let console = Console(api: self)
        let group = router.group("/console").add(middleware: ConsoleHeadersMiddleware())
        group.get("assets/console.css") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/css; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: ConsoleStylesheet.text)))
        }
        ConsoleLogin.addRoutes(to: group, console: console)
        console.addAppsPages(to: group)
        console.addNotificationsPage(to: group)
        console.addFailuresPage(to: group)
        console.addEndpointsPage(to: group)
        console.addStatisticsPage(to: group)
        console.addWebhooksPage(to: group)
        console.addDeliveriesPage(to: group)
        console.addBroadcastsPage(to: group)
        console.addSendPage(to: group)
        console.addConfigPage(to: group)
    }
}

/// The headers of every console answer: never cached (pages hold operator data), a strict
/// Content-Security-Policy (only the hub's own stylesheet; no script at all, `script-src 'none'`;
/// no inline style; never framed), no MIME sniffing, no Referer to other sites.
/// (`same-origin`, not `no-referrer`: under `no-referrer` browsers send `Origin: null` with a
/// form, and the console refuses forms whose `Origin` is not its own.)
struct ConsoleHeadersMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext

    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'none'; form-action 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'"

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = ProblemMiddleware<Context>.problem(for: error, context: context).response
        }
        response.headers[.cacheControl] = "no-store"
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.referrerPolicy] = "same-origin"
        response.headers[.xFrameOptions] = "DENY"
        return response
    }
}

extension HTTPField.Name {
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
}
