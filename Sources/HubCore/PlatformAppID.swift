/// Checks of the platform app ID formats (iOS bundle IDs, Android package names,
/// Windows package family names, web origins).
extension Platform {
    /// Checks that `appID` is well-formed for this platform.
    ///
    /// - Returns: `nil` when the ID is valid, otherwise a sentence saying what is wrong and what to do.
    public func problem(withAppID appID: String) -> String? {
        if appID.isEmpty { return "the \(appIDKind) is empty" }
        switch self {
        case .ios: return Self.bundleIDProblem(appID)
        case .android: return Self.packageNameProblem(appID)
        case .windows: return Self.packageFamilyNameProblem(appID)
        case .web: return Self.webOriginProblem(appID)
        default: return nil
        }
    }

    static func bundleIDProblem(_ id: String) -> String? {
        let allowed = id.unicodeScalars.allSatisfy { $0.isASCIIAlphanumeric || $0 == "-" || $0 == "." }
        if !allowed {
            return "'\(id)' is not a valid iOS bundle ID: use only letters, digits, hyphens and periods"
        }
        if id.count > 155 { return "'\(id)' is longer than the 155 characters a bundle ID may have" }
        let parts = id.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count < 2 || parts.contains(where: \.isEmpty) {
            return "'\(id)' is not a valid iOS bundle ID: use reverse-DNS form such as com.example.app"
        }
        return nil
    }

    static func packageNameProblem(_ id: String) -> String? {
        let parts = id.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count < 2 {
            return
                "'\(id)' is not a valid Android package name: it needs at least two segments, such as com.example.app"
        }
        for part in parts {
            guard let first = part.unicodeScalars.first, first.isASCIILetter else {
                return
                    "'\(id)' is not a valid Android package name: each segment must start with a letter (segment '\(part)')"
            }
            if !part.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "_" }) {
                return
                    "'\(id)' is not a valid Android package name: segments may hold only letters, digits and underscores (segment '\(part)')"
            }
        }
        return nil
    }

    /// Characters of a Windows publisher ID hash (Crockford base32, lower case).
    private static let publisherHashAlphabet = Set("0123456789abcdefghjkmnpqrstvwxyz".unicodeScalars)

    static func packageFamilyNameProblem(_ id: String) -> String? {
        guard let underscore = id.lastIndex(of: "_") else {
            return
                "'\(id)' is not a Windows package family name: expected Name_publisherhash, such as Contoso.Notes_8wekyb3d8bbwe"
        }
        let name = id[..<underscore]
        let hash = id[id.index(after: underscore)...]
        if name.count < 3 || name.count > 50
            || !name.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "." || $0 == "-" })
        {
            return
                "'\(id)' is not a Windows package family name: the package name '\(name)' must be 3–50 letters, digits, periods or hyphens"
        }
        if hash.count != 13 || !hash.unicodeScalars.allSatisfy({ publisherHashAlphabet.contains($0) }) {
            return
                "'\(id)' is not a Windows package family name: the publisher hash '\(hash)' must be 13 lower-case base32 characters, such as 8wekyb3d8bbwe"
        }
        return nil
    }

    static func webOriginProblem(_ id: String) -> String? {
        let schemeEnd = id.range(of: "://")
        guard let schemeEnd else {
            return "'\(id)' is not a web origin: expected scheme://host[:port], such as https://notes.contoso.com"
        }
        let scheme = id[..<schemeEnd.lowerBound]
        let rest = id[schemeEnd.upperBound...]
        if scheme != "https" && scheme != "http" {
            return "'\(id)' is not a web origin: the scheme must be https (or http for local development)"
        }
        if rest.isEmpty || rest.contains("/") || rest.contains("?") || rest.contains("#") || rest.contains("@") {
            return "'\(id)' is not a web origin: give only scheme://host[:port], without a path, query or user"
        }
        var host = Substring(rest)
        if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            let port = rest[rest.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number) else {
                return "'\(id)' is not a web origin: the port '\(port)' is not a number from 1 to 65535"
            }
        }
        if DomainName.problem(String(host)) != nil && host != "localhost" {
            return "'\(id)' is not a web origin: '\(host)' is not a host name"
        }
        return nil
    }
}

/// Checks of DNS domain names, the IDs of cross-device apps.
public enum DomainName {
    /// - Returns: `nil` for a valid domain name such as `notes.contoso.com`, otherwise what is wrong.
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "the domain is empty" }
        if name.count > 253 { return "'\(name)' is longer than the 253 characters a domain may have" }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count < 2 && name != "localhost" {
            return "'\(name)' is not a domain name: use the app's domain, such as notes.contoso.com"
        }
        for label in labels {
            if label.isEmpty || label.count > 63 || label.hasPrefix("-") || label.hasSuffix("-")
                || !label.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "-" })
            {
                return
                    "'\(name)' is not a domain name: each label must be 1–63 letters, digits or inner hyphens (label '\(label)')"
            }
        }
        return nil
    }
}

extension Unicode.Scalar {
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    var isASCIIAlphanumeric: Bool { isASCIILetter || ("0"..."9").contains(self) }
}
