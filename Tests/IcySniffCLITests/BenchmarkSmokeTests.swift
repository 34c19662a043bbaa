import Testing
import Foundation

/// scripts/bench still works end to end (the smoke run issue 6 allows in CI): on a small sample
/// capture, with the binary under test, one run of each variant and no tshark. It checks that the
/// script runs and reports, not how fast anything is.
@Suite struct BenchmarkSmokeTests {
    @Test(.hangLimit)
    func benchScriptRunsOnTheSampleCapture() throws {
        let r = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/bench").path,
                             "--capture", "captures/wikipedia.pcap", "--runs", "1", "--no-tshark", "--cold", "--icy-sniff", CLI.binary],
                            executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.stderr.suffix(800))")
        let lines = r.text.split(separator: "\n").map(String.init)
        for variant in ["libpcap loop", "loop, 1 MiB reads", "icy-sniff ndjson", "icy-sniff tsv", "icy-sniff har", "read only, 1 core"] {
            #expect(lines.contains { $0.hasPrefix(variant) }, "a row for \(variant)")
        }
        #expect(lines.contains("work check: icy-sniff found 15 requests, 15 responses"), "\(r.text)")
        #expect(lines.contains { $0.hasPrefix("batch of 2 captures:") })
        // --cold: the same reads from the disk, each row with its ratio to the loop read so.
        let cold = try #require(lines.firstIndex { $0.hasPrefix("from the disk") }, "\(r.text)")
        for variant in ["loop, 1 MiB reads", "read only, 1 core", "ndjson, 1 core", "har, 1 core", "icy-sniff ndjson"] {
            let row = lines[cold...].first { $0.hasPrefix(variant) }
            #expect(row.map { $0.dropFirst(variant.count).split(separator: " ").compactMap { Double($0) }.count } == 3,
                    "a cold row for \(variant)")
        }
        // Peak RSS is the command's own (through bench/maxrss.c), not the Python interpreter's.
        let loop = try #require(lines.first { $0.hasPrefix("libpcap loop") })
        let columns = loop.split(separator: " ").compactMap { Double($0) }
        #expect(columns.count >= 5 && columns[3] < 10, "the loop's peak RSS in MiB: \(loop)")
    }

    /// `--compare`: two binaries (here the same one twice) in turn on every variant, each row
    /// with both medians, both ratios and both peaks.
    @Test(.hangLimit)
    func compareRunsBothBinariesOnEveryVariant() throws {
        let r = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/bench").path,
                             "--capture", "captures/wikipedia.pcap", "--runs", "3", "--compare", CLI.binary,
                             "--icy-sniff", CLI.binary],
                            executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.stderr.suffix(800))")
        let lines = r.text.split(separator: "\n").map(String.init)
        #expect(lines.contains("3 rounds, medians (quartiles) in s, peak RSS in MiB"), "\(r.text)")
        for variant in ["ndjson", "har", "ndjson, 1 core", "har, 1 core"] {
            let row = try #require(lines.first { $0.hasPrefix(variant + " ") && !$0.hasPrefix(variant + ",") }, "a row for \(variant)")
            // old and new medians, new/old, paired, two peaks: numbers outside the quartiles' brackets.
            let numbers = row.dropFirst(variant.count).split(separator: " ").compactMap { Double($0) }
            #expect(numbers.count == 6, "\(row)")
            #expect(numbers.allSatisfy { $0 > 0 }, "\(row)")
            #expect(numbers.count == 6 && numbers[4] < 100 && numbers[5] < 100, "peaks in MiB: \(row)")
        }
    }
}
