import Foundation
import Testing

/// Compressed captures (issue 19: tshark reads .pcap.gz, .zst, .lz4, .xz, .bz2): recognised by
/// content, streamed, in single runs, on standard input and in directory walks; a file cut short
/// keeps what was readable, or says why nothing was. Compressed by Debian's `zstd`, `lz4`, `xz`
/// and `bzip2` (scripts/install-deps installs them).
@Suite struct CompressedInputTests {
    static var hasTools: Bool {
        Unchecked.note(["lz4", "xz", "bzip2", "gzip", "zstd"].allSatisfy { FileManager.default.isExecutableFile(atPath: "/usr/bin/\($0)") },
                       "compressed input (lz4, xz, bzip2, zstd)")
    }

    @Test(.enabled(if: CompressedInputTests.hasTools || ProcessInfo.processInfo.environment["CI"] != nil,
                   "lz4, xz, bzip2 or zstd is not installed (scripts/install-deps installs them)"))
    func everyCompressionReadsLikeTheOriginalInFilesAndOnStandardInput() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fields = ["--format", "tsv", "--fields", "time,method,url,status,size,flags", "-q"]
        for original in [CLI.capture("wikipedia.pcap"), CLI.corpus("zeek/zeek-image-1080-80-x.pcapng")] {
            let name = URL(fileURLWithPath: original).lastPathComponent
            let expected = try CLI.run(["-r", original] + fields).text
            #expect(expected.split(separator: "\n").count > 1)
            for tool in ["gzip", "zstd", "lz4", "xz", "bzip2"] {
                // Named .capture: content decides. Two compressions of halves, one after the
                // other, are one stream (members, frames, streams concatenated).
                let path = dir.appendingPathComponent("\(name).\(tool).capture").path
                let script = "head -c 20000 \"$1\" | $2 -c > \"$3\"; tail -c +20001 \"$1\" | $2 -c >> \"$3\""
                let z = try CLI.run(["-c", script, "sh", original, tool, path], executable: "/bin/sh")
                try #require(z.status == 0, "\(tool): \(z.stderr)")
                let file = try CLI.run(["-r", path] + fields)
                #expect(file.status == 0, "\(name) \(tool): \(file.stderr)")
                #expect(file.text == expected, "\(name) \(tool)")
                // Standard input: the magic bytes are read from the pipe, then fed in first.
                let piped = try CLI.run(["-r", "-"] + fields, stdin: try Data(contentsOf: URL(fileURLWithPath: path)))
                #expect(piped.status == 0, "\(name) \(tool) on stdin: \(piped.stderr)")
                #expect(piped.text == expected, "\(name) \(tool) on stdin")
            }
        }
        // A directory walk finds every one by content (2 captures × 5 compressions).
        let walk = try CLI.run(["-r", dir.path, "--format", "ndjson"])
        #expect(walk.status == 0, "\(walk.stderr)")
        #expect(walk.stderr.contains("10 captures (0 failed, 0 damaged)"), "\(walk.stderr)")

        // Cut short: what decompressed is analysed and the file is called damaged; a cut before
        // the first packets says why in one line (exit 2, not a capture), never "empty".
        for tool in ["gzip", "zstd", "lz4", "xz", "bzip2"] {
            let whole = try Data(contentsOf: dir.appendingPathComponent("wikipedia.pcap.\(tool).capture"))
            let cut = dir.appendingPathComponent("cut.\(tool)")
            try whole.prefix(whole.count * 2 / 3).write(to: cut)
            let r = try CLI.run(["-r", cut.path, "--format", "tsv"])
            if r.status == 0 {
                #expect(r.stderr.contains("damaged"), "\(tool): \(r.stderr)")
            } else {
                #expect(r.status == 2 && r.stderr.contains("cannot decompress: the \(tool) stream is cut short"), "\(tool): \(r.stderr)")
            }
            #expect(!r.stderr.contains("empty"), "\(tool): \(r.stderr)")
        }
    }
}
