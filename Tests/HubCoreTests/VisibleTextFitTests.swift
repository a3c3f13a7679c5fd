import HubCore
import Testing

@Suite("VisibleTextFit: the one trimming rule")
struct VisibleTextFitTests {
    static func utf8(_ text: String?) -> Int { text?.utf8.count ?? 0 }

    @Test("text that fits is left as it is")
    func fits() {
        let text = VisibleTextFit.fit(title: "Title", body: "Body", budget: 9)
        #expect(text == VisibleTextFit.Text(title: "Title", body: "Body"))
        #expect(
            VisibleTextFit.fit(title: "Title", body: nil, budget: 5) == VisibleTextFit.Text(title: "Title", body: nil))
    }

    @Test("the body is cut first, without trailing whitespace, and ends with '…'")
    func bodyFirst() throws {
        let text = try #require(VisibleTextFit.fit(title: "Title", body: "one two three", budget: 5 + 10))
        #expect(text.title == "Title")
        #expect(text.body == "one two…", "7 bytes of text and 3 of '…' fill the 10 left by the title")
        #expect(Self.utf8(text.title) + Self.utf8(text.body) <= 15)
    }

    @Test(
        "emoji sequences, flags and letters with combining marks are never split",
        arguments: [
            "👨‍👩‍👧‍👦", "🇫🇷", "e\u{301}\u{323}", "🏳️‍🌈", "漢", "👍🏽",
        ])
    func graphemes(unit: String) throws {
        let body = String(repeating: unit, count: 50)
        for budget in 0...(unit.utf8.count * 12) {
            let text = try #require(VisibleTextFit.fit(title: "", body: body, budget: budget))
            guard let cut = text.body else {
                #expect(budget < unit.utf8.count + 3, "budget \(budget): not one character and '…'")
                continue
            }
            #expect(Self.utf8(cut) <= budget, "budget \(budget)")
            #expect(cut.hasSuffix("…"))
            let kept = cut.dropLast()
            #expect(kept.utf8.count.isMultiple(of: unit.utf8.count), "budget \(budget): \(Array(kept.unicodeScalars))")
            #expect(kept.allSatisfy { $0 == Character(unit) })
            #expect(budget - Self.utf8(cut) < unit.utf8.count, "the longest prefix that fits")
        }
    }

    @Test("when no character of the body fits, the body is left out and the title is cut")
    func titleAfterBody() throws {
        let text = try #require(VisibleTextFit.fit(title: "A long title here", body: "body", budget: 10))
        #expect(text.body == nil)
        #expect(text.title == "A long…")
        let whole = try #require(VisibleTextFit.fit(title: "Title", body: "body", budget: 7))
        #expect(whole == VisibleTextFit.Text(title: "Title", body: nil), "the title fits: only the body goes")
    }

    @Test("nothing fits: nil, so the transport refuses rather than sending an empty notification")
    func nothingFits() {
        #expect(VisibleTextFit.fit(title: "Title", body: "Body", budget: 3) == nil)
        #expect(VisibleTextFit.fit(title: "🙂🙂", body: nil, budget: 6) == nil, "4 bytes of emoji and 3 of '…'")
        #expect(VisibleTextFit.fit(title: "T", body: nil, budget: -10) == nil)
        #expect(VisibleTextFit.truncated("abc", budget: 2) == nil)
        #expect(VisibleTextFit.truncated("abcdef", budget: 4) == "a…")
    }

    @Test("JSON and XML costs count escapes, so the encoded text fits the budget")
    func escapingCosts() throws {
        #expect(VisibleTextFit.jsonCost("\"") == 2 && VisibleTextFit.jsonCost("\u{1}") == 6)
        #expect(VisibleTextFit.jsonCost("/") == 2 && VisibleTextFit.jsonCost("é") == 2)
        #expect(VisibleTextFit.xmlCost("&") == 5 && VisibleTextFit.xmlCost("<") == 4)
        #expect(VisibleTextFit.xmlCost("'") == 6 && VisibleTextFit.xmlCost("a") == 1)
        let body = String(repeating: "a&<\"", count: 100)
        let text = try #require(
            VisibleTextFit.fit(title: "t", body: body, budget: 101, cost: VisibleTextFit.xmlCost))
        let cost = (text.title + (text.body ?? "")).reduce(0) { $0 + VisibleTextFit.xmlCost($1) }
        #expect(cost <= 101 && cost > 101 - 6 - 1)
    }
}
