public import struct Foundation.Date

extension InterceptedStore {
    public func exportUser(_ key: FeedKey) async throws -> UserRecord {
        try await call("exportUser") { try await $0.exportUser(key) }
    }

    public func eraseUser(_ key: FeedKey, at now: Date) async throws -> UserErasure {
        try await call("eraseUser") { try await $0.eraseUser(key, at: now) }
    }
}
