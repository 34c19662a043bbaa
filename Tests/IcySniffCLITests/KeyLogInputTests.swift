import Foundation
import Testing

/// What `--keylog` is given, as users give it (issue 31): a pipe or FIFO (`--keylog <(ssh host
/// cat keys)`) is read as a stream; a FIFO nobody writes does not block; `/dev/zero` and a
/// directory are refused with one line and exit 2; a key log with a 50 MB line is read line by
/// line in little memory, the line skipped.
@Suite struct KeyLogInputTests {
    static let capture = CLI.capture("tls-sample.pcap"), keys = CLI.capture("tls-sample.keys")

    @Test(.hangLimit)
    func aFIFOWithAWriterIsReadAsAStream() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("keys.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "cat \"$0\" > \"$1\"", Self.keys, fifo]
        try writer.run()
        let r = try CLI.run(["-r", Self.capture, "--keylog", fifo, "--format", "tsv"])
        writer.waitUntilExit()
        #expect(r.status == 0 && r.stderr.contains("3 TLS connections (3 decrypted)"), "\(r.stderr)")
    }

    @Test(.hangLimit)
    func aFIFOWithoutAWriterDoesNotBlock() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("nobody.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let r = try CLI.run(["-r", Self.capture, "--keylog", fifo, "--format", "tsv"])
        #expect(r.status == 0 && r.stderr.contains("holds no secrets"), "\(r.stderr)")
    }

    @Test func whatCannotBeAKeyLogIsRefused() throws {
        for (path, says) in [("/dev/zero", "'/dev/zero' is not a key log"), ("/tmp", "it is a directory")] {
            let r = try CLI.run(["-r", Self.capture, "--keylog", path, "--format", "tsv"])
            #expect(r.status == 2, "\(path)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains(says), "\(path): \(r.stderr)")
        }
    }

    @Test(.hangLimit)
    func aHugeLineIsSkippedNotHeld() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("long.keys")
        var data = Data(repeating: 0x61, count: 50_000_000)
        data.append(0x0A)
        data.append(try Data(contentsOf: URL(fileURLWithPath: Self.keys)))
        try data.write(to: file)
        let (r, mib) = try CLI.runMeasured(["-r", Self.capture, "--keylog", file.path, "--format", "tsv"])
        #expect(r.status == 0 && r.stderr.contains("3 TLS connections (3 decrypted)"), "\(r.stderr)")
        #expect(underAddressSanitizer || mib < 48, "peak RSS \(mib) MiB (109 MiB when the file was read whole)")
    }

    /// A key log with only a TLS 1.3 connection's handshake secrets (issue 31, item 9): its
    /// requests cannot be decrypted, and that is said — flagged tls_secrets_incomplete, not
    /// counted as decrypted — instead of "decrypted": true and no transaction.
    @Test func handshakeSecretsAloneAreNamed() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("handshake-only.keys")
        let lines = try String(contentsOfFile: Self.keys, encoding: .utf8).split(separator: "\n").filter { $0.contains("HANDSHAKE_TRAFFIC_SECRET") }
        #expect(lines.count == 2)
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let r = try CLI.run(["-r", Self.capture, "--keylog", file.path, "--connections", "--format", "ndjson"])
        #expect(r.status == 0)
        let tls13 = try #require(r.text.split(separator: "\n").first { $0.contains("\"TLS 1.3\"") })
        #expect(tls13.contains("\"decrypted\":false") && tls13.contains("tls_secrets_incomplete"), "\(tls13)")
        #expect(r.stderr.contains("tls_secrets_incomplete×1") && !r.stderr.contains("(1 decrypted)"), "\(r.stderr)")
    }
}
