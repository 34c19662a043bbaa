import Foundation
import Testing

/// Errors a user causes: one line naming the problem, a documented exit code, no stack trace.
@Suite struct ErrorsTests {
    func expectOneLine(_ r: CLI.Result, status: Int32, contains text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == status, "exit code", sourceLocation: sourceLocation)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line, got: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.hasPrefix("icy-sniff: ") || r.stderr.hasPrefix("Error: "), sourceLocation: sourceLocation)
        #expect(r.stderr.contains(text), "\(r.stderr)", sourceLocation: sourceLocation)
    }

    @Test func missingFile() throws {
        expectOneLine(try CLI.run(["-r", "/nonexistent.pcap", "--har", "--quiet"]), status: 2, contains: "cannot open '/nonexistent.pcap': No such file or directory")
    }

    @Test func notACapture() throws {
        expectOneLine(try CLI.run(["-r", "Package.swift", "--har", "--quiet"]), status: 2, contains: "is not a pcap or pcapng capture")
    }

    @Test func directoryWithoutCaptures() throws {
        expectOneLine(try CLI.run(["-r", "Sources", "--har", "--quiet"]), status: 2, contains: "no captures found in Sources")
    }

    @Test func invalidFilter() throws {
        expectOneLine(try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-f", "tcp port eighty", "--quiet"]), status: 2, contains: "invalid capture filter 'tcp port eighty'")
    }

    @Test func missingInterface() throws {
        let r = try CLI.run(["-i", "icy-no-such-if0", "--quiet"])
        #expect(r.status == 2)
        #expect(r.stderr.split(separator: "\n").count == 1)
        #expect(r.stderr.contains("icy-no-such-if0"))
    }

    @Test func unwritableOutput() throws {
        expectOneLine(try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--har", "-o", "/nonexistent-dir/out.har", "--quiet"]), status: 3, contains: "cannot write '/nonexistent-dir/out.har'")
    }

    @Test func fullDiskIsOneLineAndExitCode3() throws {
        let r = try CLI.run(["-c", "\"$0\" -r captures/wikipedia.pcap --har --quiet > /dev/full", CLI.binary], executable: "/bin/bash")
        expectOneLine(r, status: 3, contains: "No space left on device")
    }

    @Test func noInputIsAUsageError() throws {
        let r = try CLI.run([])
        #expect(r.status == 64)
        #expect(r.stderr.contains("give a capture with -r FILE"))
    }

    @Test func emptyFileIsAWarningAndAValidEmptyHAR() throws {
        let r = try CLI.run(["-r", CLI.corpus("pcap2har/empty.pcap"), "--har"])
        #expect(r.status == 0)
        #expect(r.stderr.contains("is empty"))
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
        let entries = (json?["log"] as? [String: Any])?["entries"] as? [Any]
        #expect(entries?.count == 0)
    }

    @Test func truncatedCaptureWarnsKeepsWhatItReadAndStrictFails() throws {
        let dir = CLI.temporaryDirectory()
        let whole = try Data(contentsOf: URL(fileURLWithPath: CLI.capture("wikipedia.pcap")))
        let cut = dir.appendingPathComponent("cut.pcap")
        try whole.prefix(whole.count / 2 + 3).write(to: cut)
        let r = try CLI.run(["-r", cut.path, "--format", "tsv"])
        #expect(r.status == 0)
        #expect(r.stderr.contains("is damaged after packet"))
        #expect(r.text.split(separator: "\n").count > 2)
        let strict = try CLI.run(["-r", cut.path, "--format", "tsv", "--strict", "--quiet"])
        #expect(strict.status == 1)
    }

    @Test func helpDocumentsExitCodes() throws {
        let r = try CLI.run(["--help"])
        #expect(r.status == 0)
        #expect(r.text.contains("EXIT CODES"))
        #expect(r.text.contains("-r, --read <file>"))
    }
}
