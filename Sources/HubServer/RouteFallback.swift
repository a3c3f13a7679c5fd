import HTTPTypes
import HubCore
import Hummingbird

/// The routes' templates and their methods, to answer a request whose path is known but whose
/// method is not served.
struct RouteTable: Sendable {
    struct Entry: Sendable {
        /// `/v1/apps/{app}/me/feed`, as the router and the metrics name it.
        let template: String
        let segments: [Substring]
        var methods: Set<HTTPRequest.Method>
    }

    let entries: [Entry]

    init(_ routes: [Hummingbird.Router<HubRequestContext>.RouteDescription]) {
        var byTemplate: [String: Entry] = [:]
        for route in routes {
            let template = route.path.description
            byTemplate[template, default: Entry(template: template, segments: Self.segments(template), methods: [])]
                .methods.insert(route.method)
        }
        // Templates with more literal segments first, so `/v1/apps/:app/statistics` wins over a
        // parameter in the same place.
        entries = byTemplate.values.sorted {
            ($0.literalCount, $0.template) > ($1.literalCount, $1.template)
        }
    }

    /// The template a path matches (the one with the most literal segments, as the router
    /// prefers) and its methods.
    func match(_ path: String) -> (template: String, methods: Set<HTTPRequest.Method>)? {
        let parts = Self.segments(path)
        let matching = entries.filter { entry in
            entry.segments.count == parts.count
                && zip(entry.segments, parts).allSatisfy { template, part in
                    Self.isParameter(template) || template == part
                }
        }
        return matching.first.map { ($0.template, $0.methods) }
    }

    /// The `Allow` header value for `methods`: OPTIONS included, and HEAD with GET (the server
    /// answers HEAD wherever it answers GET), in a stable order.
    static func allow(_ methods: Set<HTTPRequest.Method>) -> String {
        let order: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
        let all = methods.union(methods.contains(.get) ? [.options, .head] : [.options])
        let known = order.filter(all.contains).map(\.rawValue)
        return (known + all.map(\.rawValue).filter { !known.contains($0) }.sorted()).joined(separator: ", ")
    }

    /// `:name` or `{name}` (the router's spelling), or a wildcard.
    static func isParameter(_ segment: Substring) -> Bool {
        segment.first == ":" || segment.first == "{" || segment == "*" || segment == "**"
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}

extension RouteTable.Entry {
    var literalCount: Int { segments.filter { !RouteTable.isParameter($0) }.count }
}

/// Answers requests the router found no route for, when their path is one of the API's:
/// `OPTIONS` with 204 and `Allow` (a CORS preflight from a mapped web origin also gets its
/// `Access-Control-Allow-*` headers), any other method with 405 `method-not-allowed` and `Allow`.
/// Unknown paths stay 404. Added after the routes, so it wraps only the not-found responder.
struct RouteFallbackMiddleware: RouterMiddleware {
    let table: RouteTable
    let cors: CORSPolicy

    func handle(
        _ request: Request, context: HubRequestContext,
        next: (Request, HubRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let (template, methods) = table.match(request.uri.path) else {
            return try await next(request, context)
        }
        context.coreContext.endpointPath.value = template
        let allow = RouteTable.allow(methods)
        if request.method == .options {
            var headers: HTTPFields = [.allow: allow]
            cors.addPreflightHeaders(to: &headers, request: request, methods: methods)
            return Response(status: .noContent, headers: headers)
        }
        if request.method == .head {  // an answer to HEAD has no body
            return Response(status: .methodNotAllowed, headers: [.allow: allow])
        }
        throw Problem(
            .methodNotAllowed, "\(template) does not support \(request.method.rawValue); use \(allow).",
            headers: [.allow: allow])
    }
}
