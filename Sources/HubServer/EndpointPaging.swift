import HubCore
import Hummingbird

/// The `limit` and `after` query parameters of the endpoint listings, and the `next` link of a
/// page. `after` is the last endpoint ID of the previous page in a user's listing, and
/// `<userId>/<endpointId>` in an app's (endpoint IDs have no `/`, so the last one splits them).
struct EndpointPaging {
    var limit = EndpointPage.defaultSize
    var after: String?

    /// Reads `limit` (1 to ``EndpointPage/maxSize``, default ``EndpointPage/defaultSize``) and
    /// `after` of `request`; `appWide` when `after` must name a user too.
    init(_ request: Request, appWide: Bool, errors: inout [HubError.FieldError]) {
        let query = request.uri.queryParameters
        if let text = query["limit"] {
            if let value = Int(text), (1...EndpointPage.maxSize).contains(value) {
                limit = value
            } else {
                errors.append(
                    .init(field: "limit", message: "must be a whole number from 1 to \(EndpointPage.maxSize)"))
            }
        }
        if let text = query["after"].map(String.init) {
            if text.isEmpty || (appWide && Self.position(text) == nil) {
                errors.append(
                    .init(
                        field: "after",
                        message: appWide
                            ? "must be the 'next' cursor of the previous page (<userId>/<endpointId>)"
                            : "must be an endpoint ID (the 'next' cursor of the previous page)"))
            } else {
                after = text
            }
        }
    }

    /// `<userId>/<endpointId>` as a position; `nil` when it has no `/` or an empty part.
    static func position(_ text: String) -> EndpointPosition? {
        guard let slash = text.lastIndex(of: "/") else { return nil }
        let user = String(text[..<slash])
        let id = String(text[text.index(after: slash)...])
        guard !user.isEmpty, !id.isEmpty else { return nil }
        return EndpointPosition(userId: user, endpointId: id)
    }

    /// The cursor of `position` in an app's listing.
    static func cursor(_ position: EndpointPosition) -> String { "\(position.userId)/\(position.endpointId)" }

    /// The path and query of the next page: `path` with this limit, `after` = `cursor` and the
    /// `extra` parameters (already valid values).
    func nextLink(_ path: String, cursor: String, extra: [(String, String)] = []) -> String {
        let parameters = extra + [("limit", String(limit)), ("after", cursor)]
        return path + "?" + parameters.map { "\($0)=\(HTTPText.queryValue($1))" }.joined(separator: "&")
    }
}
