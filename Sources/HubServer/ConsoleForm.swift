import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A submitted console form (`application/x-www-form-urlencoded`), and what the console reads
/// from a request besides: whether it came over HTTPS, whether its `Origin` is the hub's own.
struct ConsoleForm: Sendable {
    /// The fields; a field given twice keeps its first value.
    let fields: [String: String]

    subscript(_ name: String) -> String? { fields[name] }

    /// The field `name` without leading and trailing white space; `nil` when absent or empty.
    func text(_ name: String) -> String? {
        let value = fields[name]?.trimmingCharacters(in: .whitespacesAndNewlines)
        return value?.isEmpty == false ? value : nil
    }

    /// Parses a form body: `+` is a space, `%XX` a byte; invalid UTF-8 or escapes drop the field.
    init(body: String) {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), fields[name] == nil else { continue }
            fields[name] = parts.count > 1 ? Self.decode(parts[1]) ?? "" : ""
        }
        self.fields = fields
    }

    /// Reads the form of `request`, at most `maxBytes` long.
    /// - Throws: ``Problem`` 413 for a longer body, 415 for another content type.
    static func read(_ request: inout Request, maxBytes: Int) async throws -> ConsoleForm {
        let type = request.headers.value(.contentType)?.lowercased() ?? ""
        guard type.hasPrefix("application/x-www-form-urlencoded") else {
            throw Problem(.unsupportedMediaType, "Console forms are sent as application/x-www-form-urlencoded.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: maxBytes)
        } catch is NIOTooManyBytesError {
            throw Problem(.bodyTooLarge, "The form is larger than the \(maxBytes) bytes this server accepts.")
        }
        return ConsoleForm(body: String(decoding: buffer.readableBytesView, as: UTF8.self))
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    // MARK: The request around the form

    /// Whether the browser reached the hub over HTTPS: the hub itself serves plain HTTP, so only a
    /// TLS proxy in front can say so (`X-Forwarded-Proto: https` or `Forwarded: proto=https`).
    /// The session cookie is `Secure` then (on plain HTTP a browser would drop a `Secure` cookie).
    static func cameOverHTTPS(_ request: Request) -> Bool {
        if let proto = request.headers.value(.xForwardedProto)?.split(separator: ",").first {
            return HTTPText.trimmed(proto).lowercased() == "https"
        }
        if let forwarded = request.headers.value(.forwarded)?.lowercased() {
            return forwarded.split(whereSeparator: { $0 == ";" || $0 == "," }).contains {
                HTTPText.trimmed($0) == "proto=https"
            }
        }
        return false
    }

    /// Whether a POST may go on: without an `Origin` header (older browsers, curl) it may; with
    /// one, its host and port must be the hub's as the browser addressed it (`Host`, or the
    /// `X-Forwarded-Host` of a proxy). `Origin: null` (a sandboxed frame, a redirect) is refused.
    static func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers.value(.origin) else { return true }
        guard let url = URL(string: origin), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = url.host
        else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        let authority = "\(host):\(url.port ?? defaultPort)".lowercased()
        let candidates = [request.headers.value(.xForwardedHost), request.head.authority]
        return candidates.compactMap { $0 }.contains { candidate in
            Self.withPort(candidate.lowercased(), default: defaultPort) == authority
        }
    }

    private static func withPort(_ authority: String, default port: Int) -> String {
        // `[::1]:8080`, `[::1]`, `hub.example.com:8443`, `hub.example.com`.
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return authority }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let rest = authority[authority.index(after: close)...]
            return rest.hasPrefix(":") ? "\(host)\(rest)" : "\(host):\(port)"
        }
        return authority.contains(":") ? authority : "\(authority):\(port)"
    }
}

extension HTTPField.Name {
    static let xForwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let xForwardedHost = HTTPField.Name("X-Forwarded-Host")!
    static let forwarded = HTTPField.Name("Forwarded")!
}
