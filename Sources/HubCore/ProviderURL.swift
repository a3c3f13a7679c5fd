import Foundation

/// An `https` URL a device handed in for the hub to post to (a WNS channel URI, a Web Push
/// subscription's endpoint), past the checks every transport's URL policy starts with: nothing in
/// it is whitespace or a control character, the scheme is `https`, there is no user information,
/// and the host is usable. What a policy then allows (which hosts, which ports) is its own
/// (``HostAllowList`` checks the common allow-list).
public struct ProviderURL: Sendable, Hashable {
    /// Why a URL is refused; the text names at most the scheme, never the URL.
    public struct Refusal: Error, Sendable {
        /// What is wrong, worded to follow the field's name ("must be an https URL (it is http)").
        public var message: String
    }

    /// The host, lower-cased and percent-encoded as in the URL (an IPv6 literal keeps its brackets).
    public var host: String
    /// The port, when the URL gives one.
    public var port: Int?

    /// The scheme, lower-cased: `https`, or `http` when the check allowed it.
    public var scheme = "https"

    /// Checks `url`.
    /// - Parameters:
    ///   - url: the URL as the device handed it in.
    ///   - notAURL: the refusal when `url` does not parse at all, saying where to get a good one.
    ///   - allowingHTTP: whether `http` passes too (a policy that allows it only for some hosts
    ///     checks ``scheme`` itself).
    public init(checking url: String, notAURL: String, allowingHTTP: Bool = false) throws(Refusal) {
        if url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            throw Refusal(message: "must not contain spaces or control characters")
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme else {
            throw Refusal(message: notAURL)
        }
        let lowered = scheme.lowercased()
        guard lowered == "https" || (allowingHTTP && lowered == "http") else {
            throw Refusal(message: "must be an https URL (it is \(scheme))")
        }
        self.scheme = lowered
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            throw Refusal(message: "must not contain user information")
        }
        guard let encodedHost = components.percentEncodedHost, !encodedHost.isEmpty, !encodedHost.contains("%")
        else { throw Refusal(message: "has no usable host") }
        host = encodedHost.lowercased()
        port = components.port
    }

    /// Splits an allow-list entry `host[:port]`, keeping an IPv6 literal's brackets as the URL's
    /// ``host`` does.
    /// - Parameter entry: the entry, `host` or `host:port`.
    /// - Returns: the host and, when the entry gives one, the port.
    public static func split(_ entry: String) -> (host: String, port: Int?) {
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
            let host = String(entry[...close])
            let rest = entry[entry.index(after: close)...]
            return (host, rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil)
        }
        let parts = entry.split(separator: ":", maxSplits: 1)
        return (String(parts.first ?? ""), parts.count > 1 ? Int(parts[1]) : nil)
    }
}
