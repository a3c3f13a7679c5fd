import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Thread {
    /// Starts a thread that runs `body` under `name` (as `top -H` and perf show it; at most 15
    /// bytes, Linux's limit). The name is set by the thread itself, through `/proc/thread-self/comm`:
    /// Foundation on Linux does not apply a name set before `start()`, and its `name` setter,
    /// called from the new thread, sometimes did nothing — it names the thread the starter
    /// recorded, which the new thread can run before (CI saw the commit thread keep its starter's
    /// name, `oot.default-qos`, once in four runs of `GroupCommitTests`).
    static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            #if canImport(Glibc)
                // What pthread_setname_np does on Linux (Glibc does not export it to Swift).
                let file = open("/proc/thread-self/comm", O_WRONLY)
                if file >= 0 {
                    _ = name.withCString { write(file, $0, strlen($0)) }
                    close(file)
                }
            #else
                Thread.current.name = name
            #endif
            body()
        }.start()
    }
}
