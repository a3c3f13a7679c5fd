/// Why a ``HubClient`` asks its token provider for a user token.
///
/// The client asks with ``initial`` for its first request, then reuses the token until the hub
/// refuses it; it then asks once with ``invalidated`` (Graph's "access token invalidated") and
/// retries the request with the fresh token. A second refusal fails the request with
/// ``HubClientError/Code/unauthorized``.
public struct TokenRequestReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The client has no token yet: return the user's current token (a cached one is fine).
    public static let initial = TokenRequestReason(rawValue: "initial")
    /// The hub refused the last token (expired, revoked, wrong audience): return a fresh one,
    /// refreshing it with the identity provider; do not return the same token again.
    public static let invalidated = TokenRequestReason(rawValue: "invalidated")
    public var description: String { rawValue }
}

/// Hands a ``HubClient`` the signed-in user's token (a JWT of one of the app's identity
/// registrations).
///
/// ```swift
/// let client = HubClient(baseURL: hubURL, app: "notes.contoso.com") { reason in
///     reason == .invalidated ? try await auth.refreshedAccessToken() : try await auth.accessToken()
/// }
/// ```
public typealias TokenProvider = @Sendable (_ reason: TokenRequestReason) async throws -> String

/// Caches the user token and makes sure one refusal leads to one refresh, however many requests
/// saw it at once.
actor TokenCache {
    private let provider: TokenProvider
    private var token: String?
    /// Counts tokens obtained; a request remembers the generation of the token it sent.
    private var generation = 0
    private var pending: Task<(token: String, generation: Int), any Error>?

    init(provider: @escaping TokenProvider) {
        self.provider = provider
    }

    /// The current token and its generation, asking the provider (`initial`) if there is none.
    func current() async throws(HubClientError) -> (token: String, generation: Int) {
        if let token { return (token, generation) }
        return try await obtain(.initial)
    }

    /// A token newer than the refused one of `generation`: the one another request already
    /// obtained, or a fresh one from the provider (`invalidated`).
    func replacing(generation refused: Int) async throws(HubClientError) -> (token: String, generation: Int) {
        if let token, generation > refused { return (token, generation) }
        return try await obtain(.invalidated)
    }

    /// Asks the provider, or joins the request already under way.
    private func obtain(_ reason: TokenRequestReason) async throws(HubClientError) -> (token: String, generation: Int) {
        let task: Task<(token: String, generation: Int), any Error>
        if let pending {
            task = pending
        } else {
            let provider = self.provider
            task = Task {
                do {
                    return self.store(try await provider(reason))
                } catch {
                    self.forget()
                    throw error
                }
            }
            pending = task
        }
        do {
            return try await task.value
        } catch {
            throw Self.providerError(error)
        }
    }

    /// Keeps a token the provider returned.
    private func store(_ fresh: String) -> (token: String, generation: Int) {
        pending = nil
        token = fresh
        generation += 1
        return (fresh, generation)
    }

    /// Forgets the token after the provider failed, so the next request asks again.
    private func forget() {
        pending = nil
        token = nil
    }

    private static func providerError(_ error: any Error) -> HubClientError {
        if let error = error as? HubClientError { return error }
        return HubClientError(.tokenUnavailable, "The token provider failed to supply a user token.", underlying: error)
    }
}
