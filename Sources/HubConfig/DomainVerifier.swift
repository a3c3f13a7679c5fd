import AsyncHTTPClient
// Public because `verify(domain:token:)` and `wellKnownURL(domain:port:)` return `URL`.
public import Foundation
import NIOSSL

/// Why a domain could not be verified. ``message`` says what is wrong and what the operator can do.
public struct DomainVerificationError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, for callers that react differently (exit codes, retries).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A short stable name such as `unreachable`.
        public let name: String

        private init(_ name: String) { self.name = name }

        /// The domain or port cannot be used to build an `https://` URL.
        public static let invalidInput = Code("invalidInput")
        /// No connection: DNS failure, connection refused, or a timeout.
        public static let unreachable = Code("unreachable")
        /// The TLS handshake failed, usually because the certificate is not trusted or not for this host.
        public static let tlsFailure = Code("tlsFailure")
        /// The server answered with a status other than 200 (including redirects, which are not followed).
        public static let httpStatus = Code("httpStatus")
        /// The body is not JSON of the shape `{"verification": [...]}` or is larger than 64 KiB.
        public static let badDocument = Code("badDocument")
        /// The document is well formed but does not list the expected token.
        public static let tokenMissing = Code("tokenMissing")

        public var description: String { name }
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong and how to fix it, ready to show to an operator.
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Checks that a domain proves ownership by serving its verification token over HTTPS.
///
/// The verifier fetches `https://<domain>/.well-known/notification-hub.json` and expects a JSON
/// object whose `verification` member is an array of strings (or a single string), one of which is
/// the app's token, for example:
///
/// ```json
/// {
///   "verification": [
///     "hub-verify=9f86d081884c7d65"
///   ]
/// }
/// ```
///
/// Redirects are not followed, the body is limited to 64 KiB, and the server certificate must be
/// valid for the domain. With a CA file, that file is the only trust root (system roots are not
/// consulted); without one, the system roots are used.
public struct DomainVerifier: Sendable {
    /// The path of the document on the verified domain.
    public static let wellKnownPath = "/.well-known/notification-hub.json"
    /// The largest body accepted, in bytes.
    public static let maximumDocumentSize = 64 * 1024

    /// A PEM file with the CA certificate(s) to trust instead of the system roots, or `nil`.
    public let caFile: String?
    /// The HTTPS port to connect to; 443 except in tests.
    public let port: Int
    /// The limit for the whole exchange: connecting, the TLS handshake and reading the body.
    public let timeout: Duration

    /// - Parameters:
    ///   - caFile: A PEM file whose certificates become the only trusted roots (`--ca-file`).
    ///   - port: The port to connect to (`--port`); 443 by default.
    ///   - timeout: How long the whole check may take before it fails as ``DomainVerificationError/Code/unreachable``.
    public init(caFile: String? = nil, port: Int = 443, timeout: Duration = .seconds(10)) {
        self.caFile = caFile
        self.port = port
        self.timeout = timeout
    }

    /// Fetches the well-known document from `domain` and checks it lists `token`.
    ///
    /// - Parameters:
    ///   - domain: A host name such as `notes.contoso.com` (no scheme, port or path).
    ///   - token: The expected entry, such as `hub-verify=9f86d081884c7d65`. Entries are compared
    ///     exactly, after trimming surrounding white space from the document's entries.
    /// - Returns: The URL that was checked.
    /// - Throws: ``DomainVerificationError`` describing the first problem found.
    @discardableResult
    public func verify(domain: String, token: String) async throws -> URL {
        let host = try Self.normalizedHost(domain)
        guard (1...65_535).contains(port) else {
            throw DomainVerificationError(
                code: .invalidInput,
                message: "port \(port) is not a TCP port; pass a value from 1 to 65535 (443 is the HTTPS default)"
            )
        }
        let url = Self.wellKnownURL(domain: host, port: port)
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw DomainVerificationError(
                code: .tlsFailure,
                message: "cannot read the CA file '\(caFile)'; pass --ca-file with a readable PEM file"
            )
        }

        let body = try await fetch(url, host: host)
        let entries = try Self.parseDocument(body, url: url, token: token)
        guard entries.contains(token) else {
            let found =
                entries.isEmpty
                ? "no entries"
                : "only " + entries.prefix(5).map { "\"\($0)\"" }.joined(separator: ", ")
                    + (entries.count > 5 ? " and \(entries.count - 5) more" : "")
            throw DomainVerificationError(
                code: .tokenMissing,
                message: "\(url.absoluteString) lists \(found) but not \"\(token)\"; "
                    + "add it to the \"verification\" array, e.g. serve \(Self.compactBody(tokens: [token])) there"
            )
        }
        return url
    }

    /// The address of the verification document: `https://domain[:port]/.well-known/notification-hub.json`,
    /// with the port left out when it is 443.
    ///
    /// `domain` should be a plain host name; ``verify(domain:token:)`` rejects anything else before
    /// calling this.
    public static func wellKnownURL(domain: String, port: Int) -> URL {
        var components = URLComponents()
        components.scheme = "https"
        components.host = domain
        components.port = port == 443 ? nil : port
        components.path = wellKnownPath
        if let url = components.url {
            return url
        }
        // Only reachable for host names `verify` would have rejected; keep the function total.
        let portSuffix = port == 443 ? "" : ":\(port)"
        return URL(string: "https://invalid.invalid\(portSuffix)\(wellKnownPath)")!
    }

    /// The document an operator should serve, pretty-printed JSON ending in a newline:
    ///
    /// ```json
    /// {
    ///   "verification": [
    ///     "hub-verify=9f86d081884c7d65"
    ///   ]
    /// }
    /// ```
    public static func documentBody(tokens: [String]) -> String {
        if tokens.isEmpty {
            return "{\n  \"verification\": []\n}\n"
        }
        let lines = tokens.map { "    " + jsonString($0) }.joined(separator: ",\n")
        return "{\n  \"verification\": [\n\(lines)\n  ]\n}\n"
    }

    // MARK: - Fetching

    /// Performs the GET and returns the body, mapping every failure to a ``DomainVerificationError``.
    private func fetch(_ url: URL, host: String) async throws -> [UInt8] {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            tls.trustRoots = .file(caFile)
        }
        let timeAmount = TimeAmountConversion.nanoseconds(of: timeout)
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(timeAmount), read: .nanoseconds(timeAmount))
        )
        // Fail on the first connection error instead of retrying until the deadline: this is a
        // one-shot check and the operator wants the real reason quickly.
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

        do {
            let body = try await fetch(url, host: host, client: client, timeoutNanoseconds: timeAmount)
            try await client.shutdown()
            return body
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func fetch(
        _ url: URL,
        host: String,
        client: HTTPClient,
        timeoutNanoseconds: Int64
    ) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "accept", value: "application/json")
        request.headers.add(name: "user-agent", value: "NotificationHub-domain-verifier")

        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .nanoseconds(timeoutNanoseconds))
        } catch {
            throw connectionError(error, url: url, host: host)
        }

        let status = Int(response.status.code)
        guard status == 200 else {
            throw statusError(
                status,
                reason: response.status.reasonPhrase,
                url: url,
                location: response.headers.first(name: "location")
            )
        }
        if let length = response.headers.first(name: "content-length").flatMap(Int.init),
            length > Self.maximumDocumentSize
        {
            throw Self.tooLargeError(url: url)
        }

        var bytes: [UInt8] = []
        do {
            for try await chunk in response.body {
                guard bytes.count + chunk.readableBytes <= Self.maximumDocumentSize else {
                    throw Self.tooLargeError(url: url)
                }
                bytes.append(contentsOf: chunk.readableBytesView)
            }
        } catch let error as DomainVerificationError {
            throw error
        } catch {
            throw connectionError(error, url: url, host: host)
        }
        return bytes
    }

    // MARK: - Error mapping

    /// Maps an error from connecting, the handshake or reading to `unreachable` or `tlsFailure`.
    private func connectionError(_ error: any Error, url: URL, host: String) -> any Error {
        if error is CancellationError { return error }
        let endpoint = "\(host):\(port)"

        if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
            let trust =
                if let caFile {
                    "signed by the CA in '\(caFile)' (--ca-file)"
                } else {
                    "trusted by this machine's root store; if it is signed by a private CA, pass that CA's PEM file with --ca-file"
                }
            return DomainVerificationError(
                code: .tlsFailure,
                message: "TLS with \(endpoint) failed (\(error)); the server must present a certificate "
                    + "valid for \(host) and \(trust)"
            )
        }

        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .connectTimeout, .tlsHandshakeTimeout, .deadlineExceeded, .readTimeout,
                .getConnectionFromPoolTimeout:
                return DomainVerificationError(
                    code: .unreachable,
                    message: "\(endpoint) did not answer within \(timeout) (\(clientError.shortDescription)); "
                        + "check that \(host) resolves to the server and that HTTPS is open on port \(port)"
                )
            default:
                break
            }
        }

        return DomainVerificationError(
            code: .unreachable,
            message: "could not fetch \(url.absoluteString) (\(error)); check that \(host) resolves in DNS "
                + "and that a web server accepts HTTPS on port \(port)" + (port == 443 ? "" : " (set with --port)")
        )
    }

    private func statusError(_ status: Int, reason: String, url: URL, location: String?) -> DomainVerificationError {
        let fix = "serve \(Self.compactBody(tokens: ["hub-verify=…"])) at \(url.absoluteString) with status 200"
        if (300..<400).contains(status) {
            let target = location.map { " to \($0)" } ?? ""
            return DomainVerificationError(
                code: .httpStatus,
                message: "\(url.absoluteString) answered \(status) \(reason) (a redirect\(target)); "
                    + "redirects are not followed, so \(fix)"
            )
        }
        return DomainVerificationError(
            code: .httpStatus,
            message: "\(url.absoluteString) answered \(status) \(reason) instead of 200; \(fix)"
        )
    }

    private static func tooLargeError(url: URL) -> DomainVerificationError {
        DomainVerificationError(
            code: .badDocument,
            message: "\(url.absoluteString) is larger than \(maximumDocumentSize / 1024) KiB; "
                + "serve only \(compactBody(tokens: ["hub-verify=…"]))"
        )
    }

    // MARK: - Parsing

    /// Reads the `verification` entries from the document, trimmed of surrounding white space.
    static func parseDocument(_ body: [UInt8], url: URL, token: String) throws -> [String] {
        let expected = "a JSON object like \(compactBody(tokens: [token]))"
        func badDocument(_ problem: String) -> DomainVerificationError {
            DomainVerificationError(
                code: .badDocument,
                message: "\(url.absoluteString) \(problem); serve \(expected) "
                    + "(\"verification\" may also be a single string)"
            )
        }

        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw badDocument("is not valid JSON")
        }
        guard let object = json as? [String: Any] else {
            throw badDocument("is JSON but not an object")
        }
        guard let value = object["verification"] else {
            throw badDocument("has no \"verification\" member")
        }
        if let single = value as? String {
            return [trimmed(single)]
        }
        guard let array = value as? [Any] else {
            throw badDocument("has a \"verification\" member that is neither a string nor an array of strings")
        }
        var entries: [String] = []
        for element in array {
            guard let entry = element as? String else {
                throw badDocument("has a non-string entry in the \"verification\" array")
            }
            entries.append(trimmed(entry))
        }
        return entries
    }

    /// Validates and lower-cases a host name, dropping one trailing dot.
    static func normalizedHost(_ domain: String) throws -> String {
        var host = domain.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        let isValid =
            !host.isEmpty && host.utf8.count <= 253
            && labels.allSatisfy { label in
                (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                    && label.unicodeScalars.allSatisfy { scalar in
                        scalar.isASCII
                            && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-")
                    }
            }
        guard isValid else {
            throw DomainVerificationError(
                code: .invalidInput,
                message: "'\(domain)' is not a host name; pass only the domain, such as notes.contoso.com "
                    + "(no scheme, path or port; use --port for a non-standard port, and punycode for international names)"
            )
        }
        return host
    }

    private static func trimmed(_ text: String) -> String {
        var slice = Substring(text)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }

    /// The document on one line, for error messages.
    static func compactBody(tokens: [String]) -> String {
        "{\"verification\": [" + tokens.map(jsonString).joined(separator: ", ") + "]}"
    }

    /// `text` as a JSON string literal.
    private static func jsonString(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}

/// Converts a `Duration` to whole nanoseconds for NIO's `TimeAmount`, saturating at `Int64.max`.
private enum TimeAmountConversion {
    static func nanoseconds(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? 0 : .max }
        return max(0, whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue)
    }
}
