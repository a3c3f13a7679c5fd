public import AsyncHTTPClient
public import Foundation
import HubCore
import NIOCore

/// One OAuth 2.0 token request (RFC 6749 §4.4 client credentials, RFC 7523 JWT bearer): a form
/// POSTed to a token endpoint, and its answer decoded — the access token and its lifetime, or the
/// endpoint's `error` and `error_description` with any `Retry-After`.
///
/// What an answer means for a provider (which error code, what to tell the operator) stays with
/// the provider; this type only speaks OAuth.
public struct OAuthTokenRequest: Sendable {
    /// The token endpoint.
    public var url: String
    /// The form fields, in order (`grant_type` first by convention).
    public var form: [(String, String)]

    /// - Parameters:
    ///   - url: the token endpoint.
    ///   - form: the form fields, in order.
    public init(url: String, form: [(String, String)]) {
        self.url = url
        self.form = form
    }

    /// The token endpoint's answer.
    public struct Answer: Sendable {
        /// The HTTP status.
        public var status: Int
        /// `access_token` of a 200 answer; `nil` when missing or empty.
        public var accessToken: String?
        /// `expires_in` (seconds), given as a number or, as Entra ID has done, as a string.
        public var expiresIn: Int?
        /// `error` of a refusal.
        public var error: String?
        /// `error_description` of a refusal.
        public var errorDescription: String?
        /// The refusal's `Retry-After`, as a delay from when the request was sent.
        public var retryAfter: Duration?

        /// An answer as decoded (or made up by a test).
        public init(
            status: Int, accessToken: String? = nil, expiresIn: Int? = nil, error: String? = nil,
            errorDescription: String? = nil, retryAfter: Duration? = nil
        ) {
            self.status = status
            self.accessToken = accessToken
            self.expiresIn = expiresIn
            self.error = error
            self.errorDescription = errorDescription
            self.retryAfter = retryAfter
        }

        /// A refusal worth retrying later (429 or 5xx) rather than a configuration fault.
        public var isTransient: Bool { status == 429 || status >= 500 }

        /// When to stop using the granted token: its lifetime (`expires_in`, else
        /// `defaultLifetime`) after `issued`, less `margin` — but never more than half the lifetime
        /// early.
        public func renewAt(issued: Date, defaultLifetime: Int, margin: Duration) -> Date {
            let lifetime = Double(max(expiresIn ?? defaultLifetime, 1))
            let early = min(margin.seconds, lifetime / 2)
            return issued.addingTimeInterval(lifetime - early)
        }
    }

    /// POSTs the form and decodes the answer; a refusal is an answer, not an error.
    /// - Parameters:
    ///   - http: the client to send with (one that follows no redirects: the form carries secrets).
    ///   - timeout: for the whole exchange.
    ///   - now: when the request is sent, for a `Retry-After` given as a date.
    /// - Throws: only when the endpoint did not answer (connection, timeout, a body over 64 KiB).
    public func send(with http: HTTPClient, timeout: Duration, now: Date) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: FormEncoding.encode(form)))
        let response = try await http.execute(request, timeout: TimeAmount(timeout))
        let body = Data(try await response.body.collect(upTo: 64 * 1024).readableBytesView)
        let fields = try? JSONDecoder().decode(Fields.self, from: body)
        let status = Int(response.status.code)
        return Answer(
            status: status, accessToken: status == 200 ? fields?.accessToken.flatMap { $0.isEmpty ? nil : $0 } : nil,
            expiresIn: fields?.expiresIn, error: fields?.error, errorDescription: fields?.errorDescription,
            retryAfter: status == 200 ? nil : RetryAfter.parse(response.headers.first(name: "retry-after"), now: now))
    }

    /// The fields of either answer.
    private struct Fields: Decodable {
        var accessToken: String?
        var expiresIn: Int?
        var error: String?
        var errorDescription: String?

        private enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case error
            case errorDescription = "error_description"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            accessToken = try? container.decode(String.self, forKey: .accessToken)
            if let number = try? container.decode(Int.self, forKey: .expiresIn) {
                expiresIn = number
            } else {
                expiresIn = (try? container.decode(String.self, forKey: .expiresIn)).flatMap { Int($0) }
            }
            error = try? container.decode(String.self, forKey: .error)
            errorDescription = try? container.decode(String.self, forKey: .errorDescription)
        }
    }
}
