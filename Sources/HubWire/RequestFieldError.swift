/// One problem with one field of a request: what the hub lists in an `invalid-request` problem's
/// `errors` (HubCore's `HubError.FieldError`) and its clients read back (HubClient's
/// `HubClientError.FieldError`).
public struct RequestFieldError: Sendable, Hashable, Codable {
    /// A JSON path such as `payload.visualContent.title`, or a header name such as `X-Hub-Endpoint`.
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}
