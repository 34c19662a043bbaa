import Testing
import Foundation

/// scripts/bench still works end to end (the smoke run issue 6 allows in CI): on a small sample
/// capture, with the binary under test, one run of each variant and no tshark. It checks that the
/// script runs and reports, not how fast anything is.
@Suite struct BenchmarkSmokeTests {
    @Test(.timeLimit(.minutes(10)))
    func benchScriptRunsOnTheSampleCapture() throws {
        let r = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/bench").path,
                             "--capture", "captures/wikipedia.pcap", "--runs", "1", "--no-tshark", "--icy-sniff", CLI.binary],
                            executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.stderr.suffix(800))")
        let lines = r.text.split(separator: "\n").map(String.init)
        for variant in ["libpcap loop", "loop, 1 MiB reads", "icy-sniff ndjson", "icy-sniff tsv", "icy-sniff har"] {
            #expect(lines.contains { $0.hasPrefix(variant) }, "a row for \(variant)")
        }
        #expect(lines.contains("work check: icy-sniff found 15 requests, 15 responses"), "\(r.text)")
        #expect(lines.contains { $0.hasPrefix("batch of 2 captures:") })
        // Peak RSS is the command's own (through bench/maxrss.c), not the Python interpreter's.
        let loop = try #require(lines.first { $0.hasPrefix("libpcap loop") })
        let columns = loop.split(separator: " ").compactMap { Double($0) }
        #expect(columns.count >= 5 && columns[3] < 10, "the loop's peak RSS in MiB: \(loop)")
    }
}
