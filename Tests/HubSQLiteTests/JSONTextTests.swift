import GRDB
import Testing

@testable import HubSQLite

/// The JSON arrays the store binds to `json_each(?)` give back exactly the strings written into them.
@Suite("JSON text for json_each")
struct JSONTextTests {
    @Test("every ASCII character, quotes, backslashes, slashes and non-ASCII text come back unchanged")
    func roundTrip() throws {
        let every = String(String.UnicodeScalarView((1..<0x80).compactMap(Unicode.Scalar.init)))
        let values = ["", "plain", every, "\"quoted\" \\ back/slash", "é漢字🙂\u{2028}", "\u{7F}\u{1F}\u{8}\u{C}"]
        let queue = try DatabaseQueue()
        let decoded = try queue.read { db in
            try String.fetchAll(
                db, sql: "SELECT value FROM json_each(?) ORDER BY key",
                arguments: [JSONText.array(values.map(JSONText.string))])
        }
        #expect(decoded == values)
    }
}
