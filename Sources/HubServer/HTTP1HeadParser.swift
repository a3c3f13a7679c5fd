import HTTPTypes

/// How a request's body is framed, from its head.
enum HTTP1BodyFraming: Equatable, Sendable {
    /// No body (no `Content-Length`, no `Transfer-Encoding`).
    case none
    /// `Content-Length` bytes.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
}

/// Why a request head was refused; the hub answers each with a problem and closes the connection.
enum HTTP1HeadError: Error, Equatable, Sendable {
    /// Not a valid HTTP/1.1 (or 1.0) request head: 400, with what is wrong.
    case invalid(String)
    /// The header fields are over ``HTTP1HeadParser/maxHeadBytes`` or ``HTTP1HeadParser/maxFieldCount``: 431.
    case fieldsTooLarge
    /// The request line alone is over ``HTTP1HeadParser/maxHeadBytes``: 414.
    case lineTooLong
}

/// A parsed request head: the request as HTTP types has it and how its body is framed.
struct HTTP1RequestHead: Sendable {
    var request: HTTPRequest
    var framing: HTTP1BodyFraming
    /// The client waits for `100 Continue` before it sends the body (`Expect: 100-continue`).
    var expectsContinue = false
}

/// Parses HTTP/1.1 request heads (RFC 9112), strictly: the hub's own parser, so that a connection
/// keeps no parser state between requests (NIO's decoder kept ~2 KiB per connection; docs/benchmarks.md,
/// "Waiting").
///
/// What it refuses, each with 400 and the reason: a line ending other than CRLF (bare CR or LF),
/// a method llhttp (Node's parser) does not know, and CONNECT (the hub is no proxy), a request target with spaces, controls or non-ASCII bytes, a
/// version other than HTTP/1.1 and HTTP/1.0, a field name that is not a token or has whitespace
/// before its colon, obsolete line folding, control characters in a field value, an HTTP/1.1
/// request without `Host` or with more than one (RFC 9112 §3.2), `Content-Length` that is not a
/// decimal number, or more than one `Content-Length` field (as llhttp), a `Transfer-Encoding` other than `chunked` (or one on
/// HTTP/1.0), and `Content-Length` together with `Transfer-Encoding` — the ambiguities request
/// smuggling lives on.
enum HTTP1HeadParser {
    /// The largest request head (request line and header fields), in bytes: 80 KiB, as before.
    static let maxHeadBytes = 80 * 1024
    /// The most header fields in a head.
    static let maxFieldCount = 1000

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let colon = UInt8(ascii: ":")
    /// `Host` (HTTP types spells it only as the request's authority).
    private static let host = HTTPField.Name("Host")!

    /// Parses `head`: the request line and field lines, each ending in CRLF, without the empty
    /// line that ends the head.
    static func parse(_ head: UnsafeRawBufferPointer) -> Result<HTTP1RequestHead, HTTP1HeadError> {
        do {
            return .success(try parseHead(head))
        } catch let error as HTTP1HeadError {
            return .failure(error)
        } catch {
            return .failure(.invalid("The request head is not valid HTTP/1.1."))
        }
    }

    private static func parseHead(_ bytes: UnsafeRawBufferPointer) throws -> HTTP1RequestHead {
        var position = 0
        guard let requestLine = try nextLine(bytes, from: &position) else {
            throw HTTP1HeadError.invalid("The request line is missing.")
        }
        let (method, target, http10) = try parseRequestLine(UnsafeRawBufferPointer(rebasing: bytes[requestLine]))
        var fields = HTTPFields()
        var authority: String?
        var contentLength: Int?
        var chunked = false
        var keepAlive = false
        var expectsContinue = false
        var count = 0
        while let line = try nextLine(bytes, from: &position) {
            count += 1
            if count > maxFieldCount { throw HTTP1HeadError.fieldsTooLarge }
            let field = try parseField(UnsafeRawBufferPointer(rebasing: bytes[line]))
            // As llhttp: a tab may not end the framing fields' values (a space may).
            if field.name == .contentLength || field.name == .transferEncoding,
                bytes[line].reversed().prefix(while: { $0 == space || $0 == tab }).contains(tab)
            {
                throw HTTP1HeadError.invalid("\(field.name.canonicalName) may not end in a tab.")
            }
            switch field.name {
            case host:
                guard authority == nil else {
                    throw HTTP1HeadError.invalid("The request has more than one Host field.")
                }
                authority = field.value
                continue
            case .contentLength:
                guard let length = decimal(field.value) else {
                    throw HTTP1HeadError.invalid("Content-Length must be a decimal number of bytes.")
                }
                guard contentLength == nil else {
                    throw HTTP1HeadError.invalid("The request has more than one Content-Length field.")
                }
                contentLength = length
            case .transferEncoding:
                guard !chunked, field.value.lowercased() == "chunked" else {
                    throw HTTP1HeadError.invalid("Transfer-Encoding must be 'chunked', once.")
                }
                chunked = true
            case .connection:
                if field.value.lowercased().contains("keep-alive") { keepAlive = true }
            case .expect:
                if field.value.lowercased() == "100-continue" { expectsContinue = true }
            case RequestHeadLimits.marker:
                continue  // only the hub's own stand-in requests carry it
            default:
                break
            }
            fields.append(field)
        }
        if chunked && contentLength != nil {
            throw HTTP1HeadError.invalid("The request has both Content-Length and Transfer-Encoding.")
        }
        if chunked && http10 { throw HTTP1HeadError.invalid("HTTP/1.0 has no Transfer-Encoding.") }
        if authority == nil && !http10 {
            throw HTTP1HeadError.invalid("An HTTP/1.1 request must have a Host field.")
        }
        // HTTP/1.0 closes after the response unless the client asked to keep the connection.
        if http10 && !keepAlive { fields.append(HTTPField(name: .connection, value: "close")) }
        let request = HTTPRequest(
            method: method, scheme: "http", authority: authority, path: path(of: target), headerFields: fields)
        let framing: HTTP1BodyFraming = chunked ? .chunked : contentLength.map { .length($0) } ?? HTTP1BodyFraming.none
        return HTTP1RequestHead(request: request, framing: framing, expectsContinue: expectsContinue && !http10)
    }

    /// The range of the next line (without its CRLF), moving `position` past it; `nil` at the end.
    private static func nextLine(_ bytes: UnsafeRawBufferPointer, from position: inout Int) throws -> Range<Int>? {
        guard position < bytes.count else { return nil }
        let start = position
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == cr {
                guard index + 1 < bytes.count, bytes[index + 1] == lf else {
                    throw HTTP1HeadError.invalid("A line of the request head ends in a bare CR.")
                }
                position = index + 2
                return start..<index
            }
            if byte == lf { throw HTTP1HeadError.invalid("A line of the request head ends in a bare LF.") }
            index += 1
        }
        throw HTTP1HeadError.invalid("The request head's last line has no CRLF.")
    }

    private static func parseRequestLine(
        _ line: UnsafeRawBufferPointer
    ) throws -> (HTTPRequest.Method, String, http10: Bool) {
        // HTTP types checks the method is an RFC 9110 token.
        guard let firstSpace = line.firstIndex(of: space), firstSpace > 0,
            let method = HTTPRequest.Method(String(decoding: line[..<firstSpace], as: UTF8.self))
        else { throw HTTP1HeadError.invalid("The request line must start with a method (a token) and a space.") }
        guard methods.contains(method.rawValue) else {
            throw HTTP1HeadError.invalid(
                "The method \(method.rawValue.prefix(40)) is not one this server knows; use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS."
            )
        }
        let rest = line[(firstSpace + 1)...]
        guard let secondSpace = rest.firstIndex(of: space), secondSpace > rest.startIndex else {
            throw HTTP1HeadError.invalid("The request line must be: method, space, target, space, HTTP version.")
        }
        let target = line[rest.startIndex..<secondSpace]
        guard target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTP1HeadError.invalid("The request target may hold only visible ASCII characters.")
        }
        let version = line[(secondSpace + 1)...]
        let http10: Bool
        if version.elementsEqual("HTTP/1.1".utf8) {
            http10 = false
        } else if version.elementsEqual("HTTP/1.0".utf8) {
            http10 = true
        } else {
            throw HTTP1HeadError.invalid("The HTTP version must be HTTP/1.1 or HTTP/1.0.")
        }
        return (method, String(decoding: target, as: UTF8.self), http10)
    }

    static func parseField(_ line: UnsafeRawBufferPointer) throws -> HTTPField {
        guard let colonIndex = line.firstIndex(of: colon), colonIndex > 0 else {
            if let first = line.first, first == space || first == tab {
                throw HTTP1HeadError.invalid("Obsolete line folding is not accepted in header fields.")
            }
            throw HTTP1HeadError.invalid("A header field line must be a name, a colon and a value.")
        }
        // HTTP types checks the name is an RFC 9110 token.
        guard let name = HTTPField.Name(String(decoding: line[..<colonIndex], as: UTF8.self)) else {
            throw HTTP1HeadError.invalid("A header field name must be a token, with no whitespace before its colon.")
        }
        var start = colonIndex + 1
        var end = line.count
        while start < end, line[start] == space || line[start] == tab { start += 1 }
        while end > start, line[end - 1] == space || line[end - 1] == tab { end -= 1 }
        let value = line[start..<end]
        guard value.allSatisfy({ $0 == tab || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw HTTP1HeadError.invalid("A header field value holds a control character.")
        }
        return HTTPField(name: name, value: UnsafeRawBufferPointer(rebasing: value))
    }

    /// A non-negative decimal of at most 18 digits after leading zeros (no sign, no spaces, no list).
    private static func decimal(_ text: String) -> Int? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let significant = utf8.drop { $0 == 0x30 }
        guard significant.count <= 18 else { return nil }
        return significant.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// Checks a trailer field line (without its CRLF) as a header field line is checked: whether
    /// it asks to close the connection (`Connection: close`). `Content-Length` and
    /// `Transfer-Encoding` are refused there, as llhttp refuses them.
    static func trailerField(_ line: UnsafeRawBufferPointer) -> Result<Bool, HTTP1HeadError> {
        do {
            let field = try parseField(line)
            if field.name == .contentLength || field.name == .transferEncoding {
                throw HTTP1HeadError.invalid("\(field.name.canonicalName) may not be a trailer field.")
            }
            let closes =
                field.name == .connection
                && field.value.lowercased().split(separator: ",").contains { HTTPText.trimmed($0) == "close" }
            return .success(closes)
        } catch let error as HTTP1HeadError {
            if case .invalid(let reason) = error { return .failure(.invalid("In the trailer fields: " + reason)) }
            return .failure(error)
        } catch {
            return .failure(.invalid("A trailer field is not valid."))
        }
    }

    /// The methods llhttp (Node's parser) knows, but CONNECT.
    private static let methods: Set<String> = [
        "DELETE", "GET", "HEAD", "POST", "PUT", "OPTIONS", "TRACE", "COPY", "LOCK", "MKCOL", "MOVE", "PROPFIND",
        "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY", "CHECKOUT",
        "MERGE", "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PATCH", "PURGE", "MKCALENDAR", "LINK", "UNLINK",
        "SOURCE", "QUERY",
    ]

    /// The path (and query) of a request target: origin form as it is; absolute form
    /// (`http://host/path?query`) without its scheme and authority.
    static func path(of target: String) -> String {
        guard !target.hasPrefix("/"), let schemeEnd = target.range(of: "://") else { return target }
        let afterAuthority = target[schemeEnd.upperBound...]
        guard let start = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let path = afterAuthority[start...]
        return path.hasPrefix("?") ? "/" + path : String(path)
    }
}
