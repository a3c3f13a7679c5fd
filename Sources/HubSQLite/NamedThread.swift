import Foundation

extension Thread {
    /// Starts a thread that runs `body` under `name` (as `top -H` and perf show it). The name is
    /// set from inside the thread: Foundation on Linux does not apply a name set before `start()`,
    /// and Linux refuses names over 15 bytes outright (the thread then keeps its starter's name).
    static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            Thread.current.name = name
            body()
        }.start()
    }
}
