import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One call of the device API, relative to `/v1/apps/{app}/`.
struct HubRequest: Sendable {
    var method: String
    /// Path segments after `/v1/apps/{app}/`, unencoded (`["me", "notifications", id]`).
    var path: [String]
    var query: [(name: String, value: String)] = []
    var headers: [String: String] = [:]
    var body: Data?
    /// Seconds before the request times out; long-polls set their wait plus a margin.
    var timeout: TimeInterval = 60
}

/// Sends device API requests with the user token: asks the token provider once more on a 401,
/// retries once, and turns every failure into a ``HubClientError``.
struct Requester: Sendable {
    let baseURL: URL
    let app: String
    let session: URLSession
    let tokens: TokenCache

    /// Sends `request`; a 2xx answer returns its body and response.
    /// - Throws: ``HubClientError``, or `CancellationError` when the task was cancelled.
    func send(_ request: HubRequest) async throws -> (Data, HTTPURLResponse) {
        var (token, generation) = try await tokens.current()
        var refreshed = false
        while true {
            let (data, response) = try await transfer(urlRequest(request, token: token))
            if (200..<300).contains(response.statusCode) { return (data, response) }
            if response.statusCode == 401 && !refreshed {
                refreshed = true
                (token, generation) = try await tokens.replacing(generation: generation)
                continue
            }
            throw Self.error(status: response.statusCode, body: data, headers: response)
        }
    }

    /// Sends `request` and decodes a JSON answer.
    func send<Value: Decodable>(_ request: HubRequest, as type: Value.Type) async throws -> Value {
        try await sendReturningResponse(request, as: type).value
    }

    /// Sends `request` and decodes a JSON answer, with the response (for its headers).
    func sendReturningResponse<Value: Decodable>(
        _ request: HubRequest, as type: Value.Type
    ) async throws -> (value: Value, response: HTTPURLResponse) {
        let (data, response) = try await send(request)
        do {
            return (try HubJSON.decoder.decode(Value.self, from: data), response)
        } catch {
            throw HubClientError(
                .invalidResponse,
                "The hub's answer to \(request.method) \(request.path.joined(separator: "/")) is not the expected JSON.",
                underlying: error)
        }
    }

    /// The `URLRequest` of `request` with `token`.
    func urlRequest(_ request: HubRequest, token: String) -> URLRequest {
        var urlRequest = URLRequest(url: url(request), timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        urlRequest.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        urlRequest.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body = request.body {
            urlRequest.httpBody = body
            urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return urlRequest
    }

    /// `{baseURL}/v1/apps/{app}/{path…}?{query}`, every segment and value percent-encoded.
    func url(_ request: HubRequest) -> URL {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        var base = components.percentEncodedPath
        if base.hasSuffix("/") { base.removeLast() }
        let segments = ["v1", "apps", app] + request.path
        components.percentEncodedPath = base + "/" + segments.map(Self.encode).joined(separator: "/")
        components.percentEncodedQuery =
            request.query.isEmpty
            ? nil : request.query.map { "\(Self.encode($0.name))=\(Self.encode($0.value))" }.joined(separator: "&")
        return components.url ?? baseURL
    }

    /// Performs the HTTP exchange; connection failures become ``HubClientError/Code/transport``.
    private func transfer(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw Self.transportError(error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw HubClientError(.invalidResponse, "The hub did not answer with HTTP.")
        }
        return (data, http)
    }

    /// The error of a non-2xx answer, from its problem details when it has them.
    static func error(status: Int, body: Data, headers: HTTPURLResponse) -> HubClientError {
        let problem = try? JSONDecoder().decode(ProblemDetails.self, from: body)
        let retryAfter = RetryAfter.parse(headers.value(forHTTPHeaderField: "Retry-After"), now: Date())
        return HubClientError(
            HubClientError.code(status: status, problemType: problem?.type),
            problem?.detail ?? "The hub answered HTTP \(status).", status: status, problemType: problem?.type,
            title: problem?.title, fieldErrors: problem?.errors ?? [], retryAfter: retryAfter)
    }

    /// A failed exchange as ``HubClientError/Code/transport``, or `CancellationError` when the
    /// task was cancelled.
    static func transportError(_ error: any Error) -> any Error {
        if error is CancellationError || (error as? URLError)?.code == .cancelled || Task.isCancelled {
            return CancellationError()
        }
        if let error = error as? HubClientError { return error }
        return HubClientError(
            .transport, "The hub could not be reached: \(error.localizedDescription)", underlying: error)
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}

/// An RFC 9457 problem as the hub sends it.
struct ProblemDetails: Decodable {
    var type: String?
    var title: String?
    var status: Int?
    var detail: String?
    var errors: [HubClientError.FieldError]?
}
