import Foundation
import Testing

/// README.md and docs/*.md: every shell block is pasted by a test as written or marked as not meant
/// to be pasted; every relative link points at a file of the repository; the README stays short.
@Suite("Docs: shell blocks and links")
struct DocsShellBlockTests {
    static let root = ReadmeTourTests.root

    /// README.md and every docs/*.md, relative to the package root.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + docs
    }

    static func text(_ file: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
    }

    /// What is wrong with `block`'s marker, or `nil`: a block pasted by a suite needs that suite's
    /// file under Tests, reading blocks by that marker; any other block needs a reason not to be
    /// pasted.
    static func problem(_ block: ShellBlock) -> String? {
        let place = "\(block.file):\(block.line)"
        guard let marker = block.marker else {
            return "\(place): a shell block is neither run by a test nor marked; put "
                + "<!-- \(ShellBlock.pastedMarker(by: "SuiteName")) --> (and make that suite paste it) or "
                + "<!-- \(ShellBlock.notPastedPrefix) why --> on the line above its fence"
        }
        if marker.hasPrefix(ShellBlock.notPastedPrefix) {
            let reason = marker.dropFirst(ShellBlock.notPastedPrefix.count).trimmingCharacters(in: .whitespaces)
            return reason.isEmpty ? "\(place): say why the block is not a paste block" : nil
        }
        let prefix = ShellBlock.pastedMarker(by: "")
        guard marker.hasPrefix(prefix) else {
            return "\(place): unknown marker <!-- \(marker) -->; use \"\(prefix)SuiteName\" or "
                + "\"\(ShellBlock.notPastedPrefix) why\""
        }
        let suite = String(marker.dropFirst(prefix.count))
        let tests = root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(atPath: tests.path)?.compactMap { $0 as? String } ?? []
        guard let file = files.first(where: { $0.hasSuffix("/\(suite).swift") }),
            let source = try? String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8),
            source.contains("ShellBlock.pastedMarker(by: \"\(suite)\")")
        else {
            return "\(place): no test pastes this block: Tests/…/\(suite).swift must read the blocks marked "
                + "ShellBlock.pastedMarker(by: \"\(suite)\")"
        }
        return nil
    }

    @Test("every shell block of README.md and docs/*.md is run by a test as written, or marked not a paste block")
    func shellBlocksAreRunOrMarked() throws {
        var blocks: [ShellBlock] = []
        for file in try Self.documents() { blocks += ShellBlock.parse(try Self.text(file), file: file) }
        #expect(blocks.count >= 5, "found \(blocks.count) shell blocks")
        let problems = blocks.compactMap(Self.problem)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        let tour = blocks.filter { $0.marker == ShellBlock.pastedMarker(by: "ReadmeTourTests") }
        #expect(!tour.isEmpty && tour.allSatisfy { $0.file == "README.md" })
    }

    @Test("the check refuses an unmarked block, a marker without a reason, and a suite that pastes nothing")
    func checkFindsUnmarkedBlocks() {
        let markdown = """
            ```sh
            echo unmarked
            ```
            <!-- not a paste block: -->
              ```bash
              echo no reason
              ```
            <!-- paste block: run by NoSuchTests -->
            ```sh
            echo nobody runs me
            ```
            <!-- not a paste block: needs Docker -->
            ```sh
            docker build .
            ```
            ```yaml
            not: shell
            ```
            """
        let blocks = ShellBlock.parse(markdown, file: "x.md")
        #expect(blocks.map(\.line) == [1, 5, 9, 13])
        #expect(blocks[1].text == "echo no reason")
        let problems = blocks.map(Self.problem)
        #expect(problems[0]?.contains("x.md:1: a shell block is neither run by a test nor marked") == true)
        #expect(problems[1]?.contains("say why") == true)
        #expect(problems[2]?.contains("no test pastes this block") == true)
        #expect(problems[3] == nil)
    }

    @Test("relative links of README.md, docs/*.md and CONTRIBUTING.md point at files of the repository")
    func relativeLinksResolve() throws {
        let link = /\]\(([^)\s]+)\)/
        var broken: [String] = []
        for file in try Self.documents() + ["CONTRIBUTING.md"] {
            let directory = Self.root.appendingPathComponent(file).deletingLastPathComponent()
            for match in try Self.text(file).matches(of: link) {
                let target = String(match.1)
                guard !target.contains("://"), !target.hasPrefix("#"), !target.hasPrefix("mailto:") else { continue }
                let path = String(target.split(separator: "#", maxSplits: 1)[0])
                if !FileManager.default.fileExists(atPath: directory.appendingPathComponent(path).path) {
                    broken.append("\(file): \(target)")
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    @Test("the README stays a README for newcomers: at most 300 lines")
    func readmeIsShort() throws {
        let lines = try Self.text("README.md").split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 300, "README.md has \(lines) lines: move reference material to docs/")
    }
}
