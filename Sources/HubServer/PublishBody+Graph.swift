import HubCore

// The Graph shapes a publish body may use besides the hub's own (Microsoft Graph's notification
// resource, beta): `{"notification": {…}}`, and `fallbackPolicy {endpointFallback {platformTypes,
// fallbackDelayInSeconds, visualContent {title, body}}}`.

extension PublishBody {
    /// The notification of a body sent as `{"notification": {…}}` (one Graph example's shape);
    /// any other body as it is.
    static func unwrapped(_ body: [String: JSONValue]) -> [String: JSONValue] {
        if body.count == 1, case .object(let inner)? = body["notification"] { return inner }
        return body
    }

    /// The fallback policy of `fields` (the `fallbackPolicy` object), in either shape, and whether
    /// it was Graph's.
    static func fallbackPolicy(
        _ fields: [String: JSONValue], _ reader: inout FieldReader
    ) -> (FallbackPolicy?, graph: Bool) {
        guard let endpoint = reader.object(fields, "endpointFallback", in: "fallbackPolicy") else {
            if fields["endpointFallback"] != nil && fields["endpointFallback"] != .null { return (nil, true) }
            if let seconds = reader.integer(fields, "timeoutSeconds", in: "fallbackPolicy") {
                return (FallbackPolicy(timeoutSeconds: seconds), false)
            }
            if !reader.hasError(at: "fallbackPolicy.timeoutSeconds") {
                reader.fail(
                    "fallbackPolicy.timeoutSeconds",
                    "is required when fallbackPolicy is given (or give Graph's endpointFallback)")
            }
            return (nil, false)
        }
        let prefix = "fallbackPolicy.endpointFallback"
        if fields["timeoutSeconds"] != nil {
            reader.fail("fallbackPolicy.timeoutSeconds", "give timeoutSeconds or endpointFallback, not both")
        }
        let names = reader.strings(endpoint, "platformTypes", in: prefix) ?? []
        let platforms = names.map { Platform(rawValue: $0?.lowercased() ?? "") }
        var visual: VisualContent?
        if let content = reader.object(endpoint, "visualContent", in: prefix) {
            let title = reader.string(content, "title", in: prefix + ".visualContent")
            visual = VisualContent(
                title: title ?? "", body: reader.string(content, "body", in: prefix + ".visualContent"))
        }
        guard let delay = reader.integer(endpoint, "fallbackDelayInSeconds", in: prefix) else {
            if !reader.hasError(at: prefix + ".fallbackDelayInSeconds") {
                reader.fail(prefix + ".fallbackDelayInSeconds", "is required when endpointFallback is given")
            }
            return (nil, true)
        }
        return (FallbackPolicy(timeoutSeconds: delay, platformTypes: platforms, visualContent: visual), true)
    }

    /// `error` with its field named as this body named it: the hub names the fallback policy's
    /// fields in its own shape (`fallbackPolicy.timeoutSeconds`), a Graph body sent
    /// `fallbackPolicy.endpointFallback.fallbackDelayInSeconds`.
    func named(_ error: HubError.FieldError) -> HubError.FieldError {
        guard graphFallback, error.field.hasPrefix("fallbackPolicy.") else { return error }
        let inner = error.field.dropFirst("fallbackPolicy.".count)
        let renamed = inner == "timeoutSeconds" ? "fallbackDelayInSeconds" : String(inner)
        return HubError.FieldError(field: "fallbackPolicy.endpointFallback.\(renamed)", message: error.message)
    }
}
