import HTTPTypes
import HubCore
import Hummingbird

/// Which browser origins may call the API: the web origins an app maps in hub.yaml
/// (`platforms.web.appIds`), on that app's routes only (`/v1/apps/{app}/…`).
///
/// Every other origin, and every route outside an app (`/v1/apps`, `/beta/me/notifications`,
/// operations), gets no CORS headers at all, so a browser refuses to hand it the response.
/// Callers authenticate with bearer tokens, never cookies, so credentials are not allowed
/// (`Access-Control-Allow-Credentials` is never sent) and a mapped origin gains nothing a script
/// without the user's token could use.
struct CORSPolicy: Sendable {
    /// App ID → its web origins, lowercased without a trailing `/`.
    let origins: [String: Set<String>]

    /// The request headers a web client sends: the device API's and HubClient's.
    static let allowedHeaders = "Authorization, Content-Type, Accept, Last-Event-ID, X-Hub-Endpoint, X-UNS-ID"
    /// The response headers a web client may read besides the CORS-safelisted ones.
    static let exposedHeaders = "Location, Retry-After, WWW-Authenticate, Allow"
    /// How long a browser may cache a preflight answer, in seconds.
    static let maxAge = "600"

    init(apps: [CrossDeviceApp]) {
        var origins: [String: Set<String>] = [:]
        for app in apps {
            origins[app.id] = Set((app.platforms[.web] ?? []).map(Self.normalized))
        }
        self.origins = origins
    }

    /// The request's `Origin` when it is mapped by the app of the request's path.
    func allowedOrigin(_ request: Request) -> String? {
        guard let origin = request.headers.value(.origin), !origin.isEmpty else { return nil }
        let parts = request.uri.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 4, parts[0] == "v1", parts[1] == "apps",
            let app = try? Identifier.decodingPercentEscapes(parts[2]),
            origins[app]?.contains(Self.normalized(origin)) == true
        else { return nil }
        return origin
    }

    /// Adds the answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`) from a
    /// mapped origin: the path's methods and the headers a client may send.
    func addPreflightHeaders(to headers: inout HTTPFields, request: Request, methods: Set<HTTPRequest.Method>) {
        guard let origin = allowedOrigin(request), request.headers.value(.accessControlRequestMethod) != nil else {
            return
        }
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlAllowMethods] = RouteTable.allow(methods)
        headers[.accessControlAllowHeaders] = Self.allowedHeaders
        headers[.accessControlMaxAge] = Self.maxAge
        headers[.vary] = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
    }

    private static func normalized(_ origin: String) -> String {
        var origin = origin.lowercased()
        while origin.hasSuffix("/") { origin.removeLast() }
        return origin
    }
}

/// Adds `Access-Control-Allow-Origin` (with `Vary: Origin`) to every answer to a mapped origin,
/// problems included, so a web client can read why a request failed.
struct CORSMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: CORSPolicy

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        if let origin = policy.allowedOrigin(request) {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] = CORSPolicy.exposedHeaders
            if response.headers.value(.vary) == nil { response.headers[.vary] = "Origin" }
        } else if request.headers.value(.origin) != nil, response.headers.value(.vary) == nil {
            response.headers[.vary] = "Origin"
        }
        return response
    }
}
