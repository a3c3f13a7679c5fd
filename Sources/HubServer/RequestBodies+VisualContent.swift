import HubCore

// The `payload.visualContent` object of a publish body, kept apart from `PublishBody` so that the
// rest of the publish body can change without touching it.

extension FieldReader {
    /// Reads `payload.visualContent`: `title`, `body`, `titleLocKey`, `titleLocArgs`, `bodyLocKey`,
    /// `bodyLocArgs` (arrays of strings), `badge` (a whole number) and `tile` (a boolean). Type errors
    /// are collected; the hub's validation checks the values.
    mutating func visualContent(_ visual: [String: JSONValue]) -> VisualContent {
        let prefix = "payload.visualContent"
        return VisualContent(
            title: string(visual, "title", in: prefix) ?? "",
            body: string(visual, "body", in: prefix),
            titleLocKey: string(visual, "titleLocKey", in: prefix),
            titleLocArgs: strings(visual, "titleLocArgs", in: prefix).map { $0.map { $0 ?? "" } },
            bodyLocKey: string(visual, "bodyLocKey", in: prefix),
            bodyLocArgs: strings(visual, "bodyLocArgs", in: prefix).map { $0.map { $0 ?? "" } },
            badge: integer(visual, "badge", in: prefix),
            tile: bool(visual, "tile", in: prefix))
    }
}
