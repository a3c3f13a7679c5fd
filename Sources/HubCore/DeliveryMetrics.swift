import Metrics
import Synchronization

/// The dispatcher's per-send metrics (`hub_delivery_duration_seconds{transport}`,
/// `hub_deliveries_total{transport,outcome}`), with each handle made once per label set and
/// kept: making a handle per send asked the metrics factory every time (Prometheus' checks its
/// names, allocates the label list and looks it up under the registry's lock), twice per delivery.
/// Handles are made on first use, so a series appears only once something was counted in it.
final class DeliveryMetrics: Sendable {
    private struct CounterKey: Hashable {
        var transport: TransportID
        var outcome: String
    }

    private struct State {
        var timers: [TransportID: Timer] = [:]
        var counters: [CounterKey: Counter] = [:]
    }

    private let state = Mutex(State())

    /// Counts one send through `transport` that ended with `outcome` after `nanoseconds`.
    func record(transport: TransportID, outcome: DeliveryOutcome, nanoseconds: Int64) {
        let key = CounterKey(transport: transport, outcome: outcome.label)
        let (timer, counter) = state.withLock { state -> (Timer, Counter) in
            let timer =
                state.timers[transport]
                ?? Self.made(&state.timers, transport) {
                    Timer(label: "hub_delivery_duration_seconds", dimensions: [("transport", transport.rawValue)])
                }
            let counter =
                state.counters[key]
                ?? Self.made(&state.counters, key) {
                    Counter(
                        label: "hub_deliveries_total",
                        dimensions: [("transport", transport.rawValue), ("outcome", key.outcome)])
                }
            return (timer, counter)
        }
        timer.recordNanoseconds(nanoseconds)
        counter.increment()
    }

    /// Makes the handle of `key` with `make` and keeps it in `handles`.
    private static func made<Key: Hashable, Handle>(
        _ handles: inout [Key: Handle], _ key: Key, _ make: () -> Handle
    ) -> Handle {
        let handle = make()
        handles[key] = handle
        return handle
    }
}
