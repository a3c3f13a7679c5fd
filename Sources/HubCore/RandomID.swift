/// Random identifiers in the UUID version 4 text form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`,
/// lowercase), drawn from the system's secure generator (`getrandom`).
///
/// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for each value: three
/// system calls on every publish.
public enum RandomID {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A new random identifier.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
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
