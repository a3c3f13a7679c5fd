import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random identifiers in the UUID version 4 text form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`,
/// lowercase), drawn from the system's secure generator (`getrandom`).
///
/// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for each value: three
/// system calls on every publish. `SystemRandomNumberGenerator` makes one `getrandom` call per
/// 8 bytes, two per ID: under a batch load those calls were ~3 % of the hub's CPU (perf:
/// `crng_make_state` in the kernel), so IDs take their bits from `RandomBits`, which asks the
/// kernel for 4 KiB at a time.
public enum RandomID {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A new random identifier.
    public static func make() -> String {
        var (high, low) = RandomBits.shared.next128()
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
        return uuidText(high: high, low: low)
    }

    /// The 36-character UUID text form (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase) of
    /// 128 bits given as two halves.
    public static func uuidText(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[index] = hexDigits[Int((value >> UInt64(shift)) & 0xF)]
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return index
        }
    }
}

/// Secure random bits for ``RandomID``, drawn from the kernel's generator (`getrandom`, the
/// source `SystemRandomNumberGenerator` uses on Linux) 4 KiB at a time and handed out once each.
/// Where `getrandom` cannot be called (not Linux, or the call fails), each value comes from
/// `SystemRandomNumberGenerator` directly.
final class RandomBits: Sendable {
    static let shared = RandomBits()

    /// 64-bit words fetched per refill: 4 KiB, 256 IDs per system call.
    static let words = 512

    private struct Pool {
        var words = [UInt64](repeating: 0, count: RandomBits.words)
        /// The next unused word; `words.count` when all are used.
        var next = RandomBits.words
    }

    private let pool = Mutex(Pool())
    private let fill: Fill?

    /// `getrandom(buffer, length, flags)`.
    typealias Fill = @convention(c) (UnsafeMutableRawPointer?, Int, UInt32) -> Int

    init() {
        #if os(Linux)
            fill = dlsym(nil, "getrandom").map { unsafeBitCast($0, to: Fill.self) }
        #else
            fill = nil
        #endif
    }

    /// 128 random bits as two halves.
    func next128() -> (UInt64, UInt64) {
        guard let fill else {
            var generator = SystemRandomNumberGenerator()
            return (generator.next(), generator.next())
        }
        let taken = pool.withLock { pool -> (UInt64, UInt64)? in
            if pool.next + 2 > pool.words.count {
                guard Self.refill(&pool.words, with: fill) else { return nil }
                pool.next = 0
            }
            defer {
                // Each word is handed out once: cleared as it is taken.
                pool.words[pool.next] = 0
                pool.words[pool.next + 1] = 0
                pool.next += 2
            }
            return (pool.words[pool.next], pool.words[pool.next + 1])
        }
        if let taken { return taken }
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }

    /// Fills `words` from `getrandom`, which may return fewer bytes than asked when a signal
    /// interrupts it; `false` when it fails.
    private static func refill(_ words: inout [UInt64], with fill: Fill) -> Bool {
        words.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let read = fill(buffer.baseAddress! + offset, buffer.count - offset, 0)
                if read > 0 {
                    offset += read
                } else if read < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }
}
