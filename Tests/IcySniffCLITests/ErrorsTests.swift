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

    @Test func missingFileWritesNoEmptyOutput() throws {
        let r = try CLI.run(["-r", "/nonexistent.pcap", "--format", "tsv", "--quiet"])
        #expect(r.status == 2)
        #expect(r.stdout.isEmpty, "no table header for a run that read nothing: \(r.text)")
    }

    /// Run as an unprivileged user (nobody), as a user who forgot sudo would.
    static let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]

    @Test(.enabled(if: CLI.isRoot, "needs root to become nobody"))
    func permissionDeniedOnTheFile() throws {
        let file = CLI.temporaryDirectory().appendingPathComponent("root-only.pcap")
        try Data(contentsOf: URL(fileURLWithPath: CLI.capture("wikipedia.pcap"))).write(to: file)
        chmod(file.path, 0o600)
        chmod(file.deletingLastPathComponent().path, 0o755)
        let r = try CLI.run(Self.asNobody + [CLI.binary, "-r", file.path, "--quiet"], executable: "/usr/bin/setpriv")
        expectOneLine(r, status: 2, contains: "cannot open '\(file.path)': Permission denied")
    }

    @Test(.enabled(if: CLI.isRoot, "needs root to become nobody"))
    func noCapturePermissionOnTheInterface() throws {
        let r = try CLI.run(Self.asNobody + [CLI.binary, "-i", "lo", "--quiet"], executable: "/usr/bin/setpriv")
        expectOneLine(r, status: 2, contains: "no permission to capture on 'lo'")
        #expect(r.stdout.isEmpty)
    }

    @Test func unknownLinkType() throws {
        // A classic pcap header with LINKTYPE_USER0 (147) and one 4-byte record.
        var bytes: [UInt8] = []
        for v: UInt32 in [0xa1b2_c3d4] { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        for v: UInt16 in [2, 4] { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        for v: UInt32 in [0, 0, 65535, 147, 1, 0, 4, 4] { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        bytes += Array("abcd".utf8)
        let file = CLI.temporaryDirectory().appendingPathComponent("user0.pcap")
        try Data(bytes).write(to: file)
        expectOneLine(try CLI.run(["-r", file.path, "--har", "--quiet"]), status: 2, contains: "link type DLT 147 (147) is not supported")
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
        // An unknown option is named, with or without -r (without, "give a capture" was said).
        for arguments in [["--bogus"], ["-r", CLI.capture("wikipedia.pcap"), "--bogus"]] {
            let u = try CLI.run(arguments)
            #expect(u.status == 64 && u.stderr.contains("Unknown option '--bogus'"), "\(arguments): \(u.stderr)")
        }
    }

    /// A HAR or NDJSON given to -r: the line says which commands read them.
    @Test func aHARGivenToReadSaysWhatReadsIt() throws {
        let har = CLI.temporaryDirectory().appendingPathComponent("page.har")
        try Data(#"{"log":{"version":"1.2","entries":[]}}"#.utf8).write(to: har)
        let r = try CLI.run(["-r", har.path])
        #expect(r.status == 2 && r.stderr.contains("is not a pcap or pcapng capture") && r.stderr.contains("icy-sniff diff"), "\(r.stderr)")
    }

    /// --out-dir on a full or read-only file system (a 16 KiB tmpfs): the output could not be
    /// written, exit 3 as documented (it was 2, as if the capture could not be read; issue 31).
    @Test(.enabled(if: CLI.isRoot, "mounting a tmpfs needs root"))
    func outDirOnAFullOrReadOnlyFileSystemExitsThree() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mount = try CLI.run(["-c", "mount -t tmpfs -o size=16k tmpfs \"$0\"", dir.path], executable: "/bin/bash")
        try #require(mount.status == 0, "\(mount.stderr)")
        defer { _ = try? CLI.run(["-c", "umount \"$0\"", dir.path], executable: "/bin/bash") }
        let inputs = ["-r", CLI.capture("wikipedia.pcap"), "-r", CLI.capture("h3-sample.pcap"), "--har"]
        let full = try CLI.run(inputs + ["--out-dir", dir.appendingPathComponent("out").path])
        #expect(full.status == 3, "\(full.stderr)")
        #expect(full.stderr.contains("No space left on device"))
        _ = try CLI.run(["-c", "mount -o remount,ro \"$0\"", dir.path], executable: "/bin/bash")
        let readOnly = try CLI.run(inputs + ["--out-dir", dir.appendingPathComponent("out2").path])
        #expect(readOnly.status == 3 && readOnly.stderr.contains("Read-only file system"), "\(readOnly.stderr)")
    }

    /// Combinations that used to write something else than asked are refused (issue 19).
    @Test func optionsThatContradictEachOtherAreRefused() throws {
        let connectionsHAR = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--connections", "--har"])
        #expect(connectionsHAR.status == 64 && connectionsHAR.stdout.isEmpty)
        #expect(connectionsHAR.stderr.contains("--connections lists connections as a table, TSV, CSV or NDJSON"))
        let tableFiles = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--out-dir", CLI.temporaryDirectory().path, "--format", "table"])
        #expect(tableFiles.status == 64)
        #expect(tableFiles.stderr.contains("--out-dir writes files"))
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
