#if canImport(Glibc)
    import Glibc
#endif

/// glibc's allocator settings for a long-running hub.
enum MallocTuning {
    /// Free memory at the top of an arena is returned to the system only above this much.
    ///
    /// glibc's default (128 KiB) made the allocator give memory back and take it again many
    /// times a second under load: each `madvise` to give it back flushes the TLB of every core,
    /// and in the publish benchmark that cost about a fifth of the CPU of a publish. 8 MiB per
    /// arena keeps a busy hub's working memory; an idle one returns what it no longer uses (and
    /// `GLIBC_TUNABLES=glibc.malloc.trim_threshold=…` set by the operator still wins).
    static let trimThreshold: Int32 = 8 << 20

    /// Applies ``trimThreshold`` unless the environment sets glibc's malloc tunables.
    static func apply() {
        #if canImport(Glibc)
            if let tunables = getenv("GLIBC_TUNABLES"), String(cString: tunables).contains("glibc.malloc.") { return }
            // `mallopt` is declared in malloc.h, which the Glibc module does not import.
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            guard let symbol = dlsym(nil, "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
            let trimThresholdParameter: Int32 = -1  // M_TRIM_THRESHOLD
            _ = mallopt(trimThresholdParameter, trimThreshold)
        #endif
    }
}
