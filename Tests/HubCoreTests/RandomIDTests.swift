import HubCore
import Testing

@Suite("Random IDs")
struct RandomIDTests {
    @Test("a random ID is a lowercase UUID version 4 of the RFC 4122 variant")
    func shape() throws {
        for _ in 0..<1000 {
            let id = RandomID.make()
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36, "\(id)")
            for (offset, byte) in bytes.enumerated() {
                if [8, 13, 18, 23].contains(offset) {
                    #expect(byte == UInt8(ascii: "-"), "\(id)")
                } else {
                    #expect(Array("0123456789abcdef".utf8).contains(byte), "\(id)")
                }
            }
            #expect(bytes[14] == UInt8(ascii: "4"), "version nibble of \(id)")
            #expect(Array("89ab".utf8).contains(bytes[19]), "variant nibble of \(id)")
            #expect(Identifier.violation(in: id) == nil)
        }
    }

    @Test("random IDs do not repeat and use every hex digit in every free position")
    func randomness() {
        let ids = (0..<20_000).map { _ in RandomID.make() }
        #expect(Set(ids).count == ids.count)
        // Each free position takes all 16 digits over 20,000 draws (a stuck nibble would not).
        for offset in [0, 7, 9, 15, 20, 35] {
            let digits = Set(ids.map { Array($0.utf8)[offset] })
            #expect(digits.count == 16, "position \(offset)")
        }
    }
}
