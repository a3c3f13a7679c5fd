import Foundation
import HubTesting
import Testing

@Suite("README tour")
struct ReadmeTourTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README's blocks marked as pasted by this suite, in order, as one paste aimed at `port` (the
    /// only change to their text).
    static func tour(port: Int) throws -> String {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let marker = ShellBlock.pastedMarker(by: "ReadmeTourTests")
        let blocks = ShellBlock.parse(readme, file: "README.md").filter { $0.marker == marker }
        return blocks.map(\.text).joined(separator: "\n")
            .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
    }

    @Test("the README's tour, pasted as is into a fresh interactive bash, runs to its end: no command fails")
    func tour() async throws {
        let workspace = try TemporaryFolder.make("readme-tour")
        let port = try FreePort.pick()
        let tour = try Self.tour(port: port)
        #expect(tour.contains("hub serve --config hub.yaml &"))
        #expect(tour.contains("kill %1"))
        #expect(tour.hasPrefix("swift build"))
        // The hub runs on a copy of the sample hub.yaml on `port`, beside the sample's key files.
        let sample = try String(contentsOf: Self.root.appendingPathComponent("hub.yaml"), encoding: .utf8)
        try sample.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
            .write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(
            at: workspace.appendingPathComponent("examples"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("examples/dev"), to: workspace.appendingPathComponent("examples/dev"))
        // `.build/debug` is this build's, and `swift build --product hub` runs a stand-in that
        // checks its arguments and that binary: SwiftPM holds its build lock (/tmp/<path>.lock)
        // while `swift test` runs, so a real `swift build` here would wait for this test forever.
        let built = HubProcess.executable.deletingLastPathComponent()
        try FileManager.default.createDirectory(
            at: workspace.appendingPathComponent(".build"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: workspace.appendingPathComponent(".build/debug"), withDestinationURL: built)
        let tools = workspace.appendingPathComponent("tools")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        try Self.swiftStandIn.write(to: tools.appendingPathComponent("swift"), atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o755], ofItemAtPath: tools.appendingPathComponent("swift").path)
        let path = tools.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let run = try await PastedShell.run(tour, in: workspace, environment: ["PATH": path], timeout: 120)
        let transcript = run.transcript
        #expect(run.finished, "the shell did not come back within 120 s:\n\(transcript)")
        #expect(!transcript.contains(PastedShell.failed), "a command failed:\n\(transcript)")
        #expect(run.hubExit == 0, "hub serve (job %1) did not exit 0 after kill %1:\n\(transcript)")
        // Each step's answer, in order: ready, register, publish (curl and hub publish), the batch,
        // the tags, the broadcast, the synced feed, the two PATCHes, the woken long-poll, the event
        // stream, the Graph publish.
        #expect(transcript.contains(#"{"status":"ready"}"#))
        #expect(transcript.contains(#""state":"active""#), "register: \(transcript)")
        #expect(transcript.contains(#""appNotificationId":"welcome""#))
        #expect(transcript.contains(#""appNotificationId":"meeting""#))
        #expect(transcript.contains(#"{"results":[{"index":0,"notification":{"appNotificationId":"outage""#))
        #expect(transcript.contains(#""tags":["lang:fr","plan:pro"]"#), "the tags: \(transcript)")
        #expect(transcript.contains(#""status":"done""#), "the broadcast: \(transcript)")
        #expect(transcript.contains(#""appNotificationId":"dark-mode""#), "alice's feed has the broadcast")
        #expect(transcript.contains(#""changes":["#), "the synced feed")
        #expect(transcript.contains(#""readState":"read""#))
        #expect(transcript.contains(#""userActionState":"dismissed""#))
        // The long-poll's page holds lunch alone: it waited past the read and the dismissal (its
        // cursor is after them) for the publish that woke it.
        #expect(transcript.contains(#"{"changes":[{"appNotificationId":"lunch""#), "the long-poll woke with lunch")
        #expect(transcript.contains("data: "), "the event stream")
        #expect(transcript.contains(#""appNotificationId":"graph-1""#))
        #expect(!transcript.contains(#""type":"https://"#), "no problem+json answer: \(transcript)")
    }
}

extension ReadmeTourTests {
    /// `swift` for the pasted shell: accepts only the tour's `swift build --product hub`, and only
    /// when `.build/debug/hub` is there to run.
    static let swiftStandIn = """
        #!/bin/bash
        [[ "$*" == "build --product hub" ]] || { echo "swift (ReadmeTourTests): unexpected arguments: $*" >&2; exit 1; }
        [[ -x .build/debug/hub ]] || { echo "swift (ReadmeTourTests): no .build/debug/hub" >&2; exit 1; }
        echo "Build of product 'hub' complete! (built by the test run before this test)"

        """
}

/// Pastes a script into a fresh interactive bash on a terminal, as a person pastes a README block:
/// `script` (util-linux; see ``terminal``) gives bash a pseudo-terminal, so it has job control
/// (`%1`, `wait $!`), background jobs and prompts as in a terminal, and every line is typed into it. Before the
/// script, the paste sets `pipefail` and an ERR trap that prints ``failed`` for every command that
/// exits non-zero (so does `curl --fail-with-body` on an HTTP error); after it, it waits for job
/// %1 (the README's hub) and prints its exit status, then leaves.
enum PastedShell {
    /// What the ERR trap prints (typed as `TOUR-COMMAND-""FAILED`, so the echo of the typed line
    /// never matches).
    static let failed = "TOUR-COMMAND-FAILED"
    static let hubExited = "TOUR-HUB-EXIT "
    static let ended = "TOUR-END"

    /// Starts `script` as a terminal starts a shell: no signals blocked or ignored and no open
    /// files but the standard three. A child of the test process inherits its signal mask (SIGHUP,
    /// SIGINT, SIGTERM, … blocked) and some of its descriptors; a bash that cannot see SIGHUP
    /// outlives a killed `script`, and so does its hub.
    static let terminal = """
        import os, signal
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for number in range(1, signal.NSIG):
            try: signal.signal(number, signal.SIG_DFL)
            except (OSError, ValueError): pass
        os.closerange(3, 65536)
        os.execvp("script", ["script", "-qec", "bash --norc --noprofile -i", "/dev/null"])
        """

    struct Run {
        /// Everything the terminal showed: the typed lines, the prompts and what commands printed.
        var transcript: String
        /// Whether the shell reached the end of the paste and exited before the timeout.
        var finished: Bool
        /// Job %1's exit status as `wait %1` saw it, or 0 when bash had already reported it
        /// `Done`; `nil` if neither shows.
        var hubExit: Int?
    }

    static func run(
        _ script: String, in directory: URL, environment extra: [String: String] = [:], timeout: TimeInterval
    ) async throws -> Run {
        let input = """
            PS1='$ ' PS2='> '; set -o pipefail; trap 'echo "TOUR-COMMAND-""FAILED ($?): $BASH_COMMAND"' ERR
            \(script)
            trap - ERR; wait %1 2>/dev/null; echo "TOUR-HUB-""EXIT $?"
            echo "TOUR-""END"; exit 0

            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", terminal]
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["TERM"] = "dumb"
        environment["INPUTRC"] = "/dev/null"  // no reader's readline settings
        environment["HISTFILE"] = directory.appendingPathComponent("bash_history").path  // not the reader's history
        process.environment = environment
        let output = Pipe()
        let stdin = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = stdin
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let reader = Thread.detachedReader(output.fileHandleForReading)
        let status = await process.waitForExit(timeout: timeout)
        if status == nil {
            // Closing the terminal hangs up bash, which hangs up its jobs (the hub too).
            kill(process.processIdentifier, SIGKILL)
            _ = await process.waitForExit(timeout: 10)
        }
        let transcript = String(decoding: await reader.value, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
        let finished = status != nil && transcript.contains(ended)
        return Run(transcript: transcript, finished: finished, hubExit: hubExit(in: transcript))
    }

    /// Job %1's exit status: `TOUR-HUB-EXIT n` from `wait %1`, unless bash had reported the job
    /// finished before (then `wait` finds no job, 127) as `[1]+  Done    hub serve …` (exit 0) or
    /// `[1]+  Exit n    hub serve …`.
    static func hubExit(in transcript: String) -> Int? {
        let reported = /\[1\][+-]? +(Done|Exit (\d+)|[A-Z][a-z]+)[^\n]*hub serve/
        if let job = transcript.firstMatch(of: reported) {
            if job.1 == "Done" { return 0 }
            return job.2.flatMap { Int($0) }
        }
        guard let line = transcript.split(separator: "\n").last(where: { $0.hasPrefix(hubExited) }) else { return nil }
        return Int(line.dropFirst(hubExited.count).trimmingCharacters(in: .whitespaces))
    }
}

extension Thread {
    /// Reads `handle` to its end on a thread of its own (never one that runs Swift tasks).
    static func detachedReader(_ handle: FileHandle) -> Task<Data, Never> {
        Task {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: handle.readDataToEndOfFile()) }
            }
        }
    }
}

/// A TCP port nobody listens on right now.
enum FreePort {
    static func pick() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileReadUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
