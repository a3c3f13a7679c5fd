import Foundation
import HubEmulatorKit

extension WNSEmulator {
    static let roots = ["wns/toast": "toast", "wns/tile": "tile", "wns/badge": "badge"]

    func route(_ request: EmulatorRequest) -> EmulatorResponse {
        if request.path == "/accesstoken.srf" { return classicToken(request) }
        if request.path.hasSuffix("/oauth2/v2.0/token") { return entraToken(request) }
        if request.path.hasPrefix("/channels/") { return send(request) }
        return EmulatorResponse(status: 404)
    }

    // MARK: Token endpoints

    private func classicToken(_ request: EmulatorRequest) -> EmulatorResponse {
        let form = EmulatorText.parseForm(request.body)
        guard request.method == "POST", form["grant_type"] == "client_credentials" else {
            return EmulatorText.oauthError(400, "unsupported_grant_type", "grant_type must be client_credentials")
        }
        guard ["notify.windows.com", "s.notify.live.net"].contains(form["scope"] ?? "") else {
            return EmulatorText.oauthError(
                400, "invalid_scope", "The provided value for the input parameter 'scope' is not valid.")
        }
        return grant(app: form["client_id"], secret: form["client_secret"], tenant: nil, entra: false)
    }

    private func entraToken(_ request: EmulatorRequest) -> EmulatorResponse {
        let tenant = request.path.split(separator: "/").first.map(String.init) ?? ""
        let form = EmulatorText.parseForm(request.body)
        guard request.method == "POST", form["grant_type"] == "client_credentials" else {
            return EmulatorText.oauthError(
                400, "unsupported_grant_type", "AADSTS70003: grant_type must be client_credentials")
        }
        guard form["scope"] == "https://wns.windows.com/.default" else {
            return EmulatorText.oauthError(
                400, "invalid_scope", "AADSTS70011: The provided value for scope is not valid.")
        }
        return grant(app: form["client_id"], secret: form["client_secret"], tenant: tenant, entra: true)
    }

    private func grant(app: String?, secret: String?, tenant: String?, entra: Bool) -> EmulatorResponse {
        let token = "wns-emulator-" + EmulatorText.randomHex(24)
        let issued: Bool = state.withLock { state in
            guard let app, let registered = state.apps[app], registered.tenant == tenant,
                registered.secret == secret
            else { return false }
            state.accessTokens[token] = (app, now().addingTimeInterval(86_400))
            state.tokenRequests += 1
            return true
        }
        guard issued else {
            return entra
                ? EmulatorText.oauthError(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
                : EmulatorText.oauthError(400, "invalid_client", "Invalid client id or client secret")
        }
        if entra {
            return .json(
                200, #"{"token_type":"Bearer","expires_in":86399,"ext_expires_in":86399,"access_token":"\#(token)"}"#)
        }
        return .json(200, #"{"access_token":"\#(token)","token_type":"bearer","expires_in":86400}"#)
    }

    // MARK: Channels

    private func send(_ request: EmulatorRequest) -> EmulatorResponse {
        let channelID = String(request.path.dropFirst("/channels/".count))
        let correlation = request.header("ms-cv") ?? EmulatorText.randomHex(8)
        func answer(
            _ status: Int, _ description: String? = nil, wnsStatus: String? = nil, retryAfter: Int? = nil
        )
            -> EmulatorResponse
        {
            var headers = [
                ("X-WNS-Msg-ID", EmulatorText.randomHex(8).uppercased()),
                ("X-WNS-Debug-Trace", "EMULATOR-\(channelID)"),
                ("MS-CV", correlation),
            ]
            if let wnsStatus { headers.append(("X-WNS-Status", wnsStatus)) }
            if let description { headers.append(("X-WNS-Error-Description", description)) }
            if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
            if status == 200, request.header("x-wns-requestforstatus")?.lowercased() == "true" {
                headers.append(("X-WNS-DeviceConnectionStatus", "connected"))
            }
            if status != 200 { state.withLock { $0.refusedSends.append(status) } }
            return EmulatorResponse(status: status, headers: headers)
        }
        guard request.method == "POST" else { return answer(405, "Only POST is allowed") }
        let now = now()
        let (channel, tokenApp, scripted) = state.withLock { state in
            let token = request.header("authorization").flatMap {
                $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil
            }
            let grant = token.flatMap { state.accessTokens[$0] }
            let app = grant.flatMap { $0.expires > now ? $0.app : nil }
            return (
                state.channels[channelID], app,
                app == nil ? nil : state.scripted.first.map { _ in state.scripted.removeFirst() }
            )
        }
        guard let tokenApp else {
            return answer(401, "The access token is missing, invalid or expired", wnsStatus: "dropped")
        }
        guard let channel else {
            return answer(404, "The channel URI is not valid or not recognized", wnsStatus: "dropped")
        }
        if channel.expired { return answer(410, "The channel expired", wnsStatus: "dropped") }
        guard channel.app == tokenApp else {
            return answer(403, "The access token's app does not own this channel", wnsStatus: "dropped")
        }
        if let scripted {
            return answer(
                scripted.status, "Scripted by the emulator", wnsStatus: "dropped", retryAfter: scripted.retryAfter)
        }
        if let problem = Self.problem(request) {
            return answer(problem.status, problem.description, wnsStatus: "dropped")
        }
        if channel.throttled { return answer(200, wnsStatus: "channelthrottled") }
        let notification = ReceivedNotification(
            channelID: channelID, app: tokenApp, type: request.header("x-wns-type") ?? "",
            contentType: request.header("content-type") ?? "", body: request.body, tag: request.header("x-wns-tag"),
            group: request.header("x-wns-group"), timeToLive: request.header("x-wns-ttl"),
            cachePolicy: request.header("x-wns-cache-policy"), priority: request.header("x-wns-priority"))
        state.withLock { $0.received.append(notification) }
        return answer(200, wnsStatus: "received")
    }

    /// What WNS refuses in a request to a valid channel: headers, content type, size, XML.
    static func problem(_ request: EmulatorRequest) -> (status: Int, description: String)? {
        let type = request.header("x-wns-type") ?? ""
        guard type == "wns/raw" || roots[type] != nil else {
            return (400, "X-WNS-Type must be wns/toast, wns/tile, wns/badge or wns/raw")
        }
        let contentType = (request.header("content-type") ?? "").lowercased()
        let expected = type == "wns/raw" ? "application/octet-stream" : "text/xml"
        guard contentType.hasPrefix(expected) else { return (400, "Content-Type must be \(expected) for \(type)") }
        guard request.header("content-length") != nil, request.header("transfer-encoding") == nil else {
            return (400, "Content-Length is required; chunked bodies are not accepted")
        }
        guard request.body.count <= 5000 else { return (413, "The notification payload exceeds 5000 bytes") }
        for name in ["x-wns-tag", "x-wns-group"] {
            if let value = request.header(name),
                value.isEmpty || value.utf8.count > 16
                    || !value.unicodeScalars.allSatisfy({
                        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))
                    })
            {
                return (400, "\(name) must be 1 to 16 letters or digits")
            }
        }
        if let ttl = request.header("x-wns-ttl"), Int(ttl) == nil || Int(ttl)! < 0 {
            return (400, "X-WNS-TTL must be a number of seconds")
        }
        if let policy = request.header("x-wns-cache-policy"), !["cache", "no-cache"].contains(policy.lowercased()) {
            return (400, "X-WNS-Cache-Policy must be cache or no-cache")
        }
        if let priority = request.header("x-wns-priority"), !["1", "2", "3", "4"].contains(priority) {
            return (400, "X-WNS-PRIORITY must be 1 to 4")
        }
        if request.header("x-wns-suppresspopup") != nil {
            return (400, "X-WNS-SuppressPopup is for Windows Phone channels")
        }
        if let root = roots[type] {
            switch WNSXMLCheck.rootElement(of: String(decoding: request.body, as: UTF8.self)) {
            case .failure(let problem): return (400, "The XML payload is not well-formed: \(problem)")
            case .success(let element) where element != root:
                return (400, "A \(type) payload must have a <\(root)> root element, not <\(element)>")
            case .success: break
            }
        }
        return nil
    }
}
