import Foundation
import Testing

/// Rotated capture sets read as one stream (issue 17): Zeek's no_crlf trace (1,519 packets, one
/// connection, 5 transactions) cut into pieces of 20 packets as `editcap -c 20` and as
/// `tcpdump -C` name them, then read as a folder, as a list of -r files, in batch, and with a
/// piece missing.
@Suite struct CaptureSetTests {
    /// Splits a classic pcap into pieces of `count` packets; `name(i, firstSecond)` names piece i.
    static func split(_ pcap: Data, every count: Int, into dir: URL, name: (Int, UInt32) -> String) throws -> [String] {
        let header = pcap.prefix(24)
        var offset = 24, piece = 0, inPiece = 0
        var current = Data(), first: UInt32 = 0
        var names: [String] = []
        func flush() throws {
            guard inPiece > 0 else { return }
            let path = dir.appendingPathComponent(name(piece, first))
            try (header + current).write(to: path)
            names.append(path.path)
            piece += 1; inPiece = 0; current = Data()
        }
        while offset + 16 <= pcap.count {
            let bytes = [UInt8](pcap[(pcap.startIndex + offset)..<(pcap.startIndex + offset + 16)])
            let seconds = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
            let length = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
            if inPiece == 0 { first = seconds }
            current.append(pcap[(pcap.startIndex + offset)..<(pcap.startIndex + offset + 16 + length)])
            offset += 16 + length
            inPiece += 1
            if inPiece == count { try flush() }
        }
        try flush()
        return names
    }

    static func trace() throws -> Data {
        let r = try CLI.run(["-dc", CLI.corpus("zeek/no_crlf.pcap.gz")], executable: "/bin/gzip")
        return r.stdout
    }

    static func rows(_ tsv: String) -> [String] { tsv.split(separator: "\n").dropFirst().map(String.init) }

    static let fields = ["--format", "tsv", "--fields", "method,url,status,size,flags"]

    @Test func piecesReadAsOneStreamGiveTheWholeTracesTransactions() throws {
        let whole = try CLI.run(["-r", CLI.corpus("zeek/no_crlf.pcap.gz")] + Self.fields)
        let expected = Self.rows(whole.text)
        #expect(expected.count == 5 && expected.allSatisfy { $0.hasSuffix("\t") }, "no flags: an empty last cell")

        let dir = CLI.temporaryDirectory()
        let pieces = try Self.split(try Self.trace(), every: 20, into: dir) { i, s in
            String(format: "split_%05d_%@.pcap", i, String(s))
        }
        #expect(pieces.count == 76)
        // A folder: one set, one stream.
        let folder = try CLI.run(["-r", dir.path] + Self.fields)
        #expect(Self.rows(folder.text) == expected, "\(folder.stderr)")
        #expect(!folder.stderr.contains("mid-stream"), "whole pieces: every connection begins where it began")
        // The pieces given one by one, in time order.
        let listed = try CLI.run(pieces.flatMap { ["-r", $0] } + Self.fields)
        #expect(Self.rows(listed.text) == expected)
        // Batch: one output for the set, named after it.
        let out = CLI.temporaryDirectory()
        let batch = try CLI.run(["-r", dir.path, "--out-dir", out.path, "--format", "tsv", "--fields", "method,url,status,size,flags"])
        #expect(batch.status == 0)
        #expect(batch.stderr.contains("76 captures in 1 set"), "\(batch.stderr)")
        let written = try String(contentsOf: out.appendingPathComponent("split.tsv"), encoding: .utf8)
        #expect(Self.rows(written) == expected)
        // --no-join: every piece alone, the transactions at the boundaries cut in halves.
        let apart = try CLI.run(["-r", dir.path, "--no-join"] + Self.fields)
        #expect(Self.rows(apart.text).count > 5)
        #expect(apart.text.contains("response_without_request"))
    }

    @Test func tcpdumpsRotationNamesJoinToo() throws {
        let whole = try CLI.run(["-r", CLI.corpus("zeek/no_crlf.pcap.gz")] + Self.fields)
        // tcpdump -C: trace.pcap, trace.pcap1, trace.pcap2, …; icy-sniff's own -C (-w, -o):
        // trace.pcap, trace.1.pcap, trace.2.pcap, … (it was split into two sets).
        for naming in [{ (i: Int) in i == 0 ? "trace.pcap" : "trace.pcap\(i)" }, { (i: Int) in i == 0 ? "trace.pcap" : "trace.\(i).pcap" }] {
            let dir = CLI.temporaryDirectory()
            _ = try Self.split(try Self.trace(), every: 100, into: dir) { i, _ in naming(i) }
            let r = try CLI.run(["-r", dir.path] + Self.fields)
            #expect(Self.rows(r.text) == Self.rows(whole.text), "\(naming(1)): \(r.stderr)")
            #expect(r.stderr.contains("in 1 set"), "\(naming(1)): \(r.stderr)")
        }
    }

    /// A QUIC connection open where a piece is missing is ended and flagged as a TCP one is: the
    /// message counts it among those "flagged", so its row must say so.
    @Test func aQUICConnectionOpenAtAMissingPieceIsFlaggedToo() throws {
        let captures = CLI.packageRoot.appendingPathComponent("captures")
        let whole = try Data(contentsOf: captures.appendingPathComponent("h3-sample.pcap"))
        let keys = captures.appendingPathComponent("h3-sample.keys").path
        let dir = CLI.temporaryDirectory()
        // 37 packets: C1 has 24 of them, C2 13; the second piece (packets 5-9) is C1's middle.
        let pieces = try Self.split(whole, every: 5, into: dir) { i, s in String(format: "split_%05d_%@.pcap", i, String(s)) }
        #expect(pieces.count == 8)
        try FileManager.default.removeItem(atPath: pieces[1])
        let r = try CLI.run(["-r", dir.path, "--keylog", keys, "--connections", "--format", "tsv"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("flagged capture_piece_missing"), "\(r.stderr)")
        let rows = Self.rows(r.text).filter { $0.contains("\tquic\t") }
        #expect(rows.contains { $0.hasPrefix("C1\t") && $0.contains("capture_piece_missing") }, "\(r.text)")
        // Not the connections that began after the break.
        #expect(!rows.contains { $0.hasPrefix("C1\t") == false && $0.contains("capture_piece_missing") }, "\(r.text)")
        // C1's 14 datagrams after the break (packets 10-23, short headers with the fixed bit
        // greased) cannot open it again: counted, not dropped without a word.
        #expect(r.stderr.contains("quic_datagram_after_end×14"), "\(r.stderr)")
    }

    @Test func aMissingPieceIsReportedAndTheConnectionFlaggedNotMerged() throws {
        let dir = CLI.temporaryDirectory()
        let pieces = try Self.split(try Self.trace(), every: 20, into: dir) { i, s in String(format: "split_%05d_%@.pcap", i, String(s)) }
        try FileManager.default.removeItem(atPath: pieces[40])
        let r = try CLI.run(["-r", dir.path] + Self.fields)
        #expect(r.status == 0)
        #expect(r.stderr.contains("a piece of the set 'split' is missing before it (number 40 is not there)"), "\(r.stderr)")
        #expect(r.stderr.contains("flagged capture_piece_missing"))
        // The batch's summary line counts the anomalies as a single run's does.
        let summary = r.stderr.split(separator: "\n").first { $0.contains(" captures in 1 set") }
        #expect(summary?.contains("; anomalies: ") == true && summary?.contains("capture_piece_missing×1") == true, "\(r.stderr)")
        // The connection goes on after the gap: it begins again mid-stream, and that is said.
        #expect(r.stderr.contains("1 connection begins mid-stream in it, not in a piece before it"), "\(r.stderr)")
        let connections = try CLI.run(["-r", dir.path, "--connections", "--format", "tsv"])
        #expect(connections.text.contains("capture_piece_missing"))
        // The transaction the gap cut is flagged incomplete; the others are whole.
        let rows = Self.rows(r.text)
        #expect(rows.count == 5)
        #expect(rows.filter { $0.hasSuffix("\t") }.count == 4)
    }

    /// FIFOs (how the Spark job streams a rotated set from S3) can be read only once: they are
    /// not probed in advance, join the list as given, and their continuity is checked on their
    /// first packet as they are read. Pieces fed in order give the whole trace; a piece fed out of
    /// order is flagged, not merged.
    @Test func piecesStreamedThroughFIFOsJoinAndAreCheckedAsRead() throws {
        let whole = Self.rows(try CLI.run(["-r", CLI.corpus("zeek/no_crlf.pcap.gz")] + Self.fields).text)
        let dir = CLI.temporaryDirectory()
        let pieces = try Self.split(try Self.trace(), every: 100, into: dir) { i, s in String(format: "split_%05d_%@.pcap", i, String(s)) }
        func streamed(_ order: [Int]) throws -> CLI.Result {
            var fifos: [String] = []
            for (n, i) in order.enumerated() {
                let fifo = dir.appendingPathComponent("fifo-\(n)-\(i)").path
                #expect(mkfifo(fifo, 0o600) == 0)
                fifos.append(fifo)
            }
            // One writer feeds the FIFOs in turn, as the job's feeder does.
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", zip(order, fifos).map { "cat '\(pieces[$0])' > '\($1)'" }.joined(separator: " && ")]
            try writer.run()
            defer { writer.waitUntilExit(); for f in fifos { try? FileManager.default.removeItem(atPath: f) } }
            return try CLI.run(fifos.flatMap { ["-r", $0] } + Self.fields)
        }
        let inOrder = try streamed(Array(pieces.indices))
        #expect(inOrder.status == 0, "\(inOrder.stderr)")
        #expect(Self.rows(inOrder.text) == whole, "\(inOrder.stderr)")
        let swapped = try streamed([0, 1, 3, 2] + Array(4..<pieces.count))
        #expect(swapped.stderr.contains("starts before"), "\(swapped.stderr)")
        #expect(swapped.stderr.contains("flagged capture_discontinuity"), "\(swapped.stderr)")
    }
}
