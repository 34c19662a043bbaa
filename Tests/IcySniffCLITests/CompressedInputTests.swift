import Foundation
import Testing

/// zstd-compressed captures (issue 19: tshark reads .pcap.zst): recognised by content, streamed,
/// in single runs and in directory walks; a file cut short keeps what was readable. Compressed
/// by Debian's `zstd` (scripts/install-deps installs it).
@Suite struct CompressedInputTests {
    static var hasZstd: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/zstd") }

    @Test(.enabled(if: CompressedInputTests.hasZstd || ProcessInfo.processInfo.environment["CI"] != nil,
                   "zstd is not installed (scripts/install-deps installs it)"))
    func zstdCapturesReadLikeTheirOriginals() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fields = ["--format", "tsv", "--fields", "time,method,url,status,size,flags", "-q"]
        for original in [CLI.capture("wikipedia.pcap"), CLI.corpus("zeek/zeek-image-1080-80-x.pcapng")] {
            let name = URL(fileURLWithPath: original).lastPathComponent
            // A name that does not say zstd: content decides.
            let compressed = dir.appendingPathComponent("\(name).capture").path
            let z = try CLI.run(["-q", "-f", "-o", compressed, original], executable: "/usr/bin/zstd")
            try #require(z.status == 0, "\(z.stderr)")
            let expected = try CLI.run(["-r", original] + fields)
            let r = try CLI.run(["-r", compressed] + fields)
            #expect(r.status == 0, "\(name): \(r.stderr)")
            #expect(r.text == expected.text, "\(name)")
            #expect(r.text.split(separator: "\n").count > 1)
        }
        // Two frames one after the other (zstd files may be concatenated) are one stream.
        let parts = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parts) }
        let first = parts.appendingPathComponent("1.zst").path, second = parts.appendingPathComponent("2.zst").path
        let script = "head -c 20000 \"$1\" | zstd -q -c > \"$2\"; tail -c +20001 \"$1\" | zstd -q -c > \"$3\"; cat \"$2\" \"$3\" > \"$4\""
        let frames = dir.appendingPathComponent("frames.pcap.zst").path
        _ = try CLI.run(["-c", script, "sh", CLI.capture("wikipedia.pcap"), first, second, frames], executable: "/bin/sh")
        let joined = try CLI.run(["-r", frames] + fields)
        #expect(joined.text == (try CLI.run(["-r", CLI.capture("wikipedia.pcap")] + fields)).text, "\(joined.stderr)")

        // A directory walk finds them all by content.
        let walk = try CLI.run(["-r", dir.path, "--format", "ndjson"])
        #expect(walk.status == 0, "\(walk.stderr)")
        #expect(walk.stderr.contains("3 captures"), "\(walk.stderr)")

        // Cut inside the second frame: damaged, and the first frame's packets are analysed.
        var cut = try Data(contentsOf: URL(fileURLWithPath: first))
        cut.append(try Data(contentsOf: URL(fileURLWithPath: second)).prefix(12))
        let cutPath = parts.appendingPathComponent("cut.zst")
        try cut.write(to: cutPath)
        let r = try CLI.run(["-r", cutPath.path, "--format", "tsv"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("damaged"), "\(r.stderr)")
        #expect(r.stderr.contains("packets, "), "\(r.stderr)")
    }
}
