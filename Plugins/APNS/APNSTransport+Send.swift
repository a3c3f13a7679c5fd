public import HubCore
import HubHTTP2
import NIOCore
import NIOHPACK

extension APNSTransport {
    /// Sends one request with `credentials` and maps APNs' answer to an outcome.
    ///
    /// Within one call, and within ``Configuration/requestTimeout``: an `ExpiredProviderToken`
    /// answer gets one retry with a new provider token; `IdleTimeout`, `UnrelatedKeyIdInToken`,
    /// `Shutdown` and streams the server refused unprocessed (GOAWAY, `REFUSED_STREAM`) get one
    /// retry on another connection. Everything else is left to the dispatcher's back-off.
    public func send(_ request: APNSRequest, credentials: APNSCredentials) async -> DeliveryOutcome {
        await transmit(request, credentials: credentials).outcome
    }

    /// ``send(_:credentials:)``, with the `apns-id` of the notification when APNs answered (its
    /// own header, else the request's: APNs answers with the ID it was given).
    public func transmit(_ request: APNSRequest, credentials: APNSCredentials) async -> ProviderReply {
        let deadline = ContinuousClock.now + configuration.requestTimeout
        let group: APNSCredentialGroup
        switch self.group(for: credentials) {
        case .success(let found): group = found
        case .failure(let error): return ProviderReply(.rejected(reason: error.description))
        }
        if let problem = request.headerProblem { return ProviderReply(.rejected(reason: problem)) }
        let body: [UInt8]
        do {
            body = try request.payload.encoded(trimmingAlertBody: configuration.trimsAlertBody)
        } catch {
            return ProviderReply(.rejected(reason: error.description))
        }
        let exchange = await exchange(request, body: body, group: group, deadline: deadline)
        let outcome = outcome(of: exchange, request: request, group: group)
        switch exchange {
        case .answered(let response), .tokenTooYoungToRenew(let response, _):
            // HTTP/2 field names are lower-case (RFC 9113 §8.2.1): a plain compare, not
            // `first(name:)`'s case-insensitive one, on every notification.
            let apnsID = response.headers.first { $0.name == "apns-id" }?.value
            return ProviderReply(outcome, messageId: apnsID ?? request.apnsID)
        case .failed:
            return ProviderReply(outcome)
        }
    }

    /// How one send ended, before it is mapped to an outcome.
    enum Exchange {
        case answered(HTTP2Response)
        case failed(APNSError)
        /// APNs called a provider token expired that is younger than 20 minutes: the clocks disagree.
        case tokenTooYoungToRenew(HTTP2Response, age: Duration)
    }

    private func exchange(
        _ request: APNSRequest, body: [UInt8], group: APNSCredentialGroup, deadline: ContinuousClock.Instant
    ) async -> Exchange {
        let server = configuration.server(for: request.environment)
        let origin = origin(for: request.environment)
        let body = ByteBuffer(bytes: body)
        var token: APNSTokenProvider.Token?
        var renewed = false
        var movedConnections = 0
        while true {
            do {
                if let tokens = group.tokens, token == nil { token = try await tokens.token() }
            } catch {
                return .failed(
                    APNSError(.invalidCredentials, "signing the APNs provider token failed", underlying: error))
            }
            let http2 = Self.http2Request(for: request, to: origin, token: token, body: body)
            let response: HTTP2Response
            do {
                // The client sends a stream the server refused unprocessed (GOAWAY, REFUSED_STREAM)
                // again on another connection by itself.
                response = try await group.client.execute(http2, timeout: max(deadline - .now, .zero))
            } catch {
                return .failed(Self.error(for: error, server: server))
            }
            guard response.status != 200 else { return .answered(response) }
            let reason = APNSResponseBody(Array(response.body.readableBytesView)).reason
            switch reason?.action(status: response.status) {
            case .renewToken where !renewed:
                renewed = true
                guard let tokens = group.tokens, let rejected = token else { return .answered(response) }
                do {
                    guard let fresh = try await tokens.renew(replacing: rejected) else {
                        let age = configuration.now().timeIntervalSince(rejected.issuedAt)
                        return .tokenTooYoungToRenew(response, age: .milliseconds(Int64(age * 1000)))
                    }
                    token = fresh
                } catch {
                    return .answered(response)
                }
            case .reconnect where movedConnections < 2:
                movedConnections += 1
                group.client.retireConnection(of: response)
            case .reconnect, .backOffTokenUpdates:
                group.client.retireConnection(of: response)
                return .answered(response)
            case .retry where response.status == 503:
                group.client.retireConnection(of: response)
                return .answered(response)
            default:
                return .answered(response)
            }
        }
    }

    /// What a failed exchange means for APNs: at the deadline `.timedOut`; otherwise the
    /// connection failed (`.shutdown` once the transport shuts down), with how long the client
    /// backs off from connecting when it does.
    private static func error(for failure: HTTP2ClientError, server: Server) -> APNSError {
        var error: APNSError
        switch failure.code {
        case .timedOut:
            error = APNSError(.timedOut, "APNs did not answer before the request timeout (\(server))")
        case .shutdown:
            error = APNSError(.shutdown, "the APNs transport is shutting down")
        case .refused:
            error = APNSError(.connectionFailed, "APNs refused the stream repeatedly (\(server))", underlying: failure)
        case .connectionFailed:
            error = APNSError(.connectionFailed, "cannot connect to APNs at \(server)", underlying: failure)
        default:
            error = APNSError(
                .connectionFailed, "the connection to APNs (\(server)) ended before the answer", underlying: failure)
        }
        error.retryAfter = failure.retryAfter
        return error
    }

    /// The request, in the order and HPACK indexing Apple recommends (PROVIDERS.md §1.2): `:path`
    /// and `authorization` are never added to APNs' small dynamic table; `apns-id`,
    /// `apns-expiration` and `apns-collapse-id` only the first time on a connection (their names
    /// are then reused), which the HTTP/2 client sees to
    /// (``HTTP2Client/Configuration/headersIndexedOnce``); everything else is indexed. No
    /// `content-length`: APNs does not ask for it (PROVIDERS.md §1.2) and HTTP/2 frames carry the
    /// length. Written once, pseudo-headers included, rather than copied behind them by the client.
    static func http2Request(
        for request: APNSRequest, to origin: HTTP2Origin, token: APNSTokenProvider.Token?, body: ByteBuffer
    ) -> HTTP2PreparedRequest {
        var prepared = HTTP2PreparedRequest(
            origin: origin, path: "/3/device/" + request.deviceToken, pathIndexing: .nonIndexable, headerCapacity: 7,
            body: body)
        prepared.addHeader(name: "apns-push-type", value: request.payload.pushType.rawValue)
        prepared.addHeader(name: "apns-topic", value: request.topic)
        prepared.addHeader(name: "apns-priority", value: request.payload.priority.description)
        if let expiration = request.expiration {
            prepared.addHeader(name: "apns-expiration", value: expiration.description, indexing: .nonIndexable)
        }
        if let collapseID = request.collapseID {
            prepared.addHeader(name: "apns-collapse-id", value: collapseID.value, indexing: .nonIndexable)
        }
        prepared.addHeader(name: "apns-id", value: request.apnsID, indexing: .nonIndexable)
        if let token {
            prepared.addHeader(name: "authorization", value: token.authorization, indexing: .nonIndexable)
        }
        return prepared
    }
}
