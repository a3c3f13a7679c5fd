import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubConfig
import HubCore
import NIOCore

/// The flags `hub publish` and `hub broadcast` share: the app, what the notification shows, and
/// which hub and publisher key they post with.
struct PublisherOptions: ParsableArguments {
    @Option(help: "The app's ID (its domain).") var app: String
    @Option(help: "Visible title.") var title: String?
    @Option(help: "Visible body.") var body: String?
    @Option(help: "rawContent for the app (a string, often JSON).") var raw: String?
    @Option(help: "The hub's base URL; default: from server.listen in hub.yaml.") var url: String?
    @Option(help: "Publisher key as env:NAME or file:path (or the key itself); default: from hub.yaml.") var key:
        String?
    @Option(help: "Which publisher of the app in hub.yaml, by name; default: the first.") var publisher: String?

    func validate() throws {
        guard title != nil || body != nil || raw != nil else {
            throw ValidationError("give --title and/or --body (a visible notification), or --raw")
        }
    }

    /// The `payload` object of a publish or broadcast body.
    var payload: [String: Any] {
        var payload: [String: Any] = [:]
        if title != nil || body != nil {
            var visual: [String: String] = [:]
            visual["title"] = title
            visual["body"] = body
            payload["visualContent"] = visual
        }
        payload["rawContent"] = raw
        return payload
    }

    /// The base URL (`--url`, else server.listen of hub.yaml) and the publisher key of `--app`
    /// (`--key`, else `--publisher`'s or the first publisher's of hub.yaml).
    func resolveTarget(_ options: ConfigOption) throws -> (String, Secret) {
        var file: HubFile?
        if url == nil || key == nil { file = try options.loadOrExit() }
        let base: String
        if let url {
            base = url.hasSuffix("/") ? String(url.dropLast()) : url
        } else if let server = file?.server {
            let host = ["0.0.0.0", "::", ""].contains(server.host) ? "127.0.0.1" : server.host
            base = "http://\(host.contains(":") ? "[\(host)]" : host):\(server.port)"
        } else {
            base = "http://127.0.0.1:8080"
        }
        if let key {
            switch SecretReference.resolve(key, relativeTo: FileManager.default.currentDirectoryPath) {
            case .success(let secret): return (base, secret)
            case .failure(let problem): throw ValidationError("--key\(problem.message)")
            }
        }
        guard let mapped = file?.apps.first(where: { $0.id == app }) else {
            throw ValidationError("\(options.config) has no app '\(app)'; pass --key or fix --app")
        }
        guard let chosen = mapped.publishers.first(where: { publisher == nil || $0.name == publisher }) else {
            let names = mapped.publishers.map(\.name).joined(separator: ", ")
            throw ValidationError(
                publisher == nil
                    ? "\(app) has no publishers in \(options.config); add one or pass --key"
                    : "\(app) has no publisher '\(publisher ?? "")'; its publishers: \(names)")
        }
        return (base, chosen.key)
    }

    /// A request to the hub's publisher API with `key`: a POST of `json`, or a GET without.
    static func request(_ url: String, key: Secret, json: Data? = nil) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = json == nil ? .GET : .POST
        request.headers.add(name: "Authorization", value: "Bearer \(key.reveal())")
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: json))
        }
        return request
    }
}
