import Foundation
import Testing
@testable import IcySniffCore

/// Decrypting TLS application data on a second thread (`DecryptionQueue`): the records are
/// opened there, everything after them waits its turn, and the outputs are the same bytes as
/// when every record is opened as it comes.
@Suite struct DecryptionQueueTests {
    /// Captures with their key logs (nil: the keys are in the file), from the repository. TLS
    /// inside a proxy tunnel (tunnel-sample) is decrypted as it comes, never on the thread.
    static let captures: [(String, String?)] = [
        ("captures/tls-sample.pcap", "captures/tls-sample.keys"),
        ("Tests/Fixtures/tls/cbc-sample.pcap", "Tests/Fixtures/tls/cbc-sample.keys"),
        ("Tests/Fixtures/tls/nginx-curl-live.pcap", "Tests/Fixtures/tls/nginx-curl-live.keys"),
        ("Tests/Fixtures/tls/tls-sample-dsb.pcapng", nil),
        ("captures/tunnel-sample.pcap", "captures/tunnel-sample.keys"),
    ]

    struct Run {
        var har: [UInt8]
        var ndjson: [UInt8]
        var weirds: [Weird: UInt64]
        var decrypted: UInt64
        var onSecondThread: Int
    }

    /// One run of the whole pipeline: its HAR and NDJSON outputs and its counts. `thread`: the
    /// records are decrypted on the second thread from the first one on; nil: as they come.
    static func run(_ path: String, keys: String?, thread: Int?, reader: PcapSource.FileReader = .mapped) throws -> Run {
        var options = PipelineOptions()
        options.keyLog = try keys.map { try KeyLog(paths: [$0]) }
        options.decryptOnSecondThreadAfter = thread
        let har = HARWriter()
        let collected = CollectingSink()
        let pipeline = Pipeline(sink: TeeSink(har, collected), options: options)
        let source = try PcapSource.open(path: path, reader: reader)
        _ = pipeline.run(source)
        pipeline.finish()
        let harOut = OutputFile(memory: true)
        har.write(to: harOut)
        let table = OutputFile(memory: true)
        let writer = TableWriter(format: .ndjson, output: table, options: ExportOptions())
        for t in collected.transactions { writer.consume(t) }
        let stats = pipeline.stats
        return Run(har: harOut.takeBytes(), ndjson: table.takeBytes(), weirds: stats.weirds,
                   decrypted: stats.tlsDecrypted, onSecondThread: pipeline.recordsDecryptedOnSecondThread)
    }

    /// Opened as they come, and on the thread with each file reader (the mapped file's packets
    /// and libpcap's buffer): all three give the same bytes.
    static func expectSameOutputs(_ path: String, keys: String?, onTheThread: Bool = true) throws {
        let here = try run(path, keys: keys, thread: nil)
        let threaded = try run(path, keys: keys, thread: 0)
        let copied = try run(path, keys: keys, thread: 0, reader: .libpcap)
        #expect(here.onSecondThread == 0)
        #expect((threaded.onSecondThread > 0) == onTheThread, "\(path): \(threaded.onSecondThread) records on the thread")
        #expect(threaded.decrypted > 0 && threaded.decrypted == here.decrypted, "\(path)")
        #expect(firstDifference(threaded.ndjson, here.ndjson) == nil, "\(path): NDJSON")
        #expect(firstDifference(threaded.har, here.har) == nil, "\(path): HAR")
        #expect(threaded.weirds == here.weirds, "\(path)")
        #expect(copied.onSecondThread == threaded.onSecondThread, "\(path)")
        #expect(firstDifference(copied.ndjson, here.ndjson) == nil, "\(path): NDJSON, libpcap's reader")
        #expect(firstDifference(copied.har, here.har) == nil, "\(path): HAR, libpcap's reader")
        #expect(copied.weirds == here.weirds, "\(path)")
    }

    /// The first line where `a` and `b` differ, both shown (nil: the same bytes).
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String? {
        guard a != b else { return nil }
        let la = String(decoding: a, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let lb = String(decoding: b, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        for i in 0..<max(la.count, lb.count) where i >= la.count || i >= lb.count || la[i] != lb[i] {
            return "line \(i + 1): \(i < la.count ? String(la[i]) : "(none)") | \(i < lb.count ? String(lb[i]) : "(none)")"
        }
        return "same lines, other bytes"
    }

    @Test(arguments: captures.indices)
    func theSecondThreadGivesTheSameOutputs(_ i: Int) throws {
        let (capture, keys) = Self.captures[i]
        try Self.expectSameOutputs(Paths.packageRoot.appendingPathComponent(capture).path,
                                   keys: keys.map { Paths.packageRoot.appendingPathComponent($0).path },
                                   onTheThread: !capture.contains("tunnel"))
    }

    /// The records of a classic pcap file (little-endian, microseconds), header included.
    static func pcapRecords(_ data: [UInt8]) -> [Range<Int>] {
        var records: [Range<Int>] = []
        var offset = 24
        while offset + 16 <= data.count {
            let caplen = Int(data[offset + 8]) | Int(data[offset + 9]) << 8 | Int(data[offset + 10]) << 16 | Int(data[offset + 11]) << 24
            records.append(offset..<(offset + 16 + caplen))
            offset += 16 + caplen
        }
        return records
    }

    /// `data` (Ethernet, IPv4, TCP) with every TCP payload longer than `size` sent as segments of
    /// `size` bytes: the same stream, so that records span many segments as on a real network
    /// (the repository's captures are of loopback, where a segment holds whole records).
    /// Checksums are left as they were (nothing here checks them).
    static func resegmented(_ data: [UInt8], size: Int) -> [UInt8] {
        var out = Array(data[0..<24])
        for r in pcapRecords(data) {
            let packet = Array(data[(r.lowerBound + 16)..<r.upperBound])
            let ip = 14, ihl = Int(packet.count > ip ? packet[ip] & 0x0f : 0) * 4
            guard packet.count > ip + 20, packet[12] == 0x08, packet[13] == 0x00, packet[ip + 9] == 6 else {
                out += data[r]; continue
            }
            let tcp = ip + ihl, tcpLength = Int(packet[tcp + 12] >> 4) * 4
            let headers = tcp + tcpLength
            let payload = Array(packet[headers...])
            guard payload.count > size else { out += data[r]; continue }
            let seq = UInt32(packet[tcp + 4]) << 24 | UInt32(packet[tcp + 5]) << 16 | UInt32(packet[tcp + 6]) << 8 | UInt32(packet[tcp + 7])
            for start in stride(from: 0, to: payload.count, by: size) {
                let piece = payload[start..<min(start + size, payload.count)]
                var p = Array(packet[0..<headers]) + piece
                let total = UInt16(ihl + tcpLength + piece.count)
                p[ip + 2] = UInt8(total >> 8); p[ip + 3] = UInt8(total & 0xff)
                let s = seq &+ UInt32(start)
                p[tcp + 4] = UInt8(s >> 24); p[tcp + 5] = UInt8(s >> 16 & 0xff); p[tcp + 6] = UInt8(s >> 8 & 0xff); p[tcp + 7] = UInt8(s & 0xff)
                let length = UInt32(p.count)
                out += data[r.lowerBound..<(r.lowerBound + 8)]
                out += [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 24)]
                out += [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 24)]
                out += p
            }
        }
        return out
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-sniff-queue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Records that span many segments (of 40 bytes, and of 3: TLS 1.2's explicit nonce and
    /// every tag then span segments too), AES-GCM of TLS 1.2 and 1.3 and CBC: the same outputs
    /// on the thread as opened as they come, with either file reader, and as the capture as it
    /// was sent.
    @Test(arguments: ["captures/tls-sample", "Tests/Fixtures/tls/cbc-sample"], [40, 3])
    func recordsOverManySegmentsOpenAlike(_ capture: String, _ size: Int) throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("small-segments.pcap")
        let originalPath = Paths.packageRoot.appendingPathComponent(capture + ".pcap").path
        let keys = Paths.packageRoot.appendingPathComponent(capture + ".keys").path
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: originalPath)))
        let small = Self.resegmented(original, size: size)
        #expect(Self.pcapRecords(small).count > 2 * Self.pcapRecords(original).count)
        try Data(small).write(to: path)
        try Self.expectSameOutputs(path.path, keys: keys)
        let asSent = try Self.run(originalPath, keys: keys, thread: nil)
        let resent = try Self.run(path.path, keys: keys, thread: 0)
        // The same transactions as the capture as it was sent (NDJSON: no packet counts), but
        // for the file's name.
        func rows(_ run: Run, _ name: String) -> [UInt8] {
            Array(String(decoding: run.ndjson, as: UTF8.self).replacingOccurrences(of: name, with: "capture").utf8)
        }
        #expect(resent.decrypted == asSent.decrypted)
        #expect(!asSent.ndjson.isEmpty)
        #expect(Self.firstDifference(rows(resent, path.path), rows(asSent, originalPath)) == nil)
    }

    /// A record opened as it comes (a handshake record, 0-RTT) that fails while records before it
    /// wait on the thread: its direction stops at once, as without the thread. Its failure was
    /// left to its turn, and the records read meanwhile were opened with the same keys: one bit
    /// of packet 48 of nginx-curl-live flipped gave tls_decryption_failed ×1 as they come and ×4
    /// on the thread (and the corpus's 0-RTT capture damaged the same way, ×3 against ×4).
    @Test func aFailureWhileRecordsWaitStopsItsDirectionAtOnce() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/tls/nginx-curl-live")
        var bytes = try [UInt8](Data(contentsOf: capture.appendingPathExtension("pcap")))
        let records = Self.pcapRecords(bytes)
        #expect(records.count == 58)
        bytes[records[47].upperBound - 1] ^= 1   // the last byte of a record's tag
        let path = dir.appendingPathComponent("damaged.pcap").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let keys = capture.appendingPathExtension("keys").path
        let here = try Self.run(path, keys: keys, thread: nil)
        #expect(here.weirds[.tlsDecryptionFailed] == 1)
        try Self.expectSameOutputs(path, keys: keys)
    }

    /// Damaged input reads the same whether records and packets are opened as they come or on the
    /// thread: the repository's TLS and QUIC captures with keys, five bits flipped at random in
    /// their TCP and UDP payloads (eight seeds each). The same HAR, counts of anomalies and
    /// decrypted connections, and the same NDJSON rows (their order may differ: a connection no
    /// key opens may show its row before a held TLS one). The two defects above were found so.
    @Test(arguments: ["captures/tls-sample", "Tests/Fixtures/tls/nginx-curl-live", "Tests/Fixtures/tls/cbc-sample",
                      "Tests/Fixtures/quic/h3-concurrent-qpack-statuses", "Tests/Fixtures/quic/h3-chacha20-keyupdate",
                      "Tests/Fixtures/quic/h3-resume-0rtt"])
    func damagedCapturesReadAlikeOnTheThread(_ capture: String) throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = Paths.packageRoot.appendingPathComponent(capture)
        let original = try [UInt8](Data(contentsOf: base.appendingPathExtension("pcap")))
        let keys = base.appendingPathExtension("keys").path
        // Where the TCP and UDP payloads lie (Ethernet, IPv4).
        var payloads: [Range<Int>] = []
        for r in Self.pcapRecords(original) {
            let p = r.lowerBound + 16, ip = p + 14
            guard r.upperBound > ip + 20, original[p + 12] == 0x08, original[p + 13] == 0x00 else { continue }
            let l4 = ip + Int(original[ip] & 0x0f) * 4
            let start: Int
            switch original[ip + 9] {
            case 6: start = l4 + Int(original[l4 + 12] >> 4) * 4
            case 17: start = l4 + 8
            default: continue
            }
            if start < r.upperBound { payloads.append(start..<r.upperBound) }
        }
        #expect(payloads.count > 10)
        var differing: [String] = []
        for seed in 1...8 {
            var rng = SplitMix(state: UInt64(seed))
            var bytes = original
            for _ in 0..<5 {
                let range = payloads[Int(rng.next() % UInt64(payloads.count))]
                bytes[range.lowerBound + Int(rng.next() % UInt64(range.count))] ^= UInt8(1) << (rng.next() % 8)
            }
            let path = dir.appendingPathComponent("damaged-\(seed).pcap").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let here = try Self.run(path, keys: keys, thread: nil)
            let threaded = try Self.run(path, keys: keys, thread: 0)
            func rows(_ run: Run) -> [Substring] { String(decoding: run.ndjson, as: UTF8.self).split(separator: "\n").sorted() }
            if here.har != threaded.har || here.weirds != threaded.weirds || here.decrypted != threaded.decrypted
                || rows(here) != rows(threaded) {
                differing.append("seed \(seed): \(here.weirds) | \(threaded.weirds)")
            }
        }
        #expect(differing.isEmpty, "\(capture): \(differing)")
    }

    /// A capture cut in two files inside records' bodies, the first file's source gone before
    /// the second is read: the same HAR and counts as the whole file, wherever the cut.
    @Test func aRecordThatGoesOnInTheNextFileIsOpenedWhole() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = try [UInt8](Data(contentsOf: Paths.captures.appendingPathComponent("tls-sample.pcap")))
        let whole = Self.resegmented(original, size: 40)
        let wholePath = dir.appendingPathComponent("whole.pcap")
        try Data(whole).write(to: wholePath)
        let keys = Paths.captures.appendingPathComponent("tls-sample.keys").path
        let together = try Self.run(wholePath.path, keys: keys, thread: 0)
        let records = Self.pcapRecords(whole)
        for fraction in [0.45, 0.6, 0.75, 0.9] {
            let cut = records[Int(Double(records.count) * fraction)].lowerBound
            let first = dir.appendingPathComponent("a.pcap"), second = dir.appendingPathComponent("b.pcap")
            try Data(whole[0..<cut]).write(to: first)
            try Data(whole[0..<24] + whole[cut...]).write(to: second)
            var options = PipelineOptions()
            options.keyLog = try KeyLog(paths: [keys])
            options.decryptOnSecondThreadAfter = 0
            let har = HARWriter()
            let pipeline = Pipeline(sink: har, options: options)
            for file in [first, second] {
                var source: PcapSource? = try PcapSource.open(path: file.path)
                #expect(source!.readsMapped)
                _ = pipeline.run(source!)
                source = nil
            }
            pipeline.finish()
            let out = OutputFile(memory: true)
            har.write(to: out)
            #expect(pipeline.recordsDecryptedOnSecondThread > 0)
            #expect(pipeline.stats.tlsDecrypted == together.decrypted, "cut at \(fraction)")
            #expect(pipeline.stats.weirds == together.weirds, "cut at \(fraction)")
            #expect(Self.firstDifference(out.takeBytes(), together.har) == nil, "cut at \(fraction)")
        }
    }

    /// A record that does not authenticate is flagged the same way on the thread, and nothing
    /// after it in its direction is passed on.
    @Test func aTamperedRecordIsFlaggedOnTheThreadToo() throws {
        var data = try [UInt8](Data(contentsOf: Paths.captures.appendingPathComponent("tls-sample.pcap")))
        // The largest packet (the first of the largest, as the records run).
        let largest = try #require(Self.pcapRecords(data).max { $0.count < $1.count })
        data[largest.upperBound - 40] ^= 0x01
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("queue-tampered-\(getpid()).pcap")
        try Data(data).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let keys = Paths.captures.appendingPathComponent("tls-sample.keys").path
        let threaded = try Self.run(path.path, keys: keys, thread: 0)
        #expect(threaded.weirds[.tlsDecryptionFailed] == 1)
        try Self.expectSameOutputs(path.path, keys: keys)
    }

    /// TLS 1.3 KeyUpdate (RFC 8446 §4.6.3) is applied by the direction's decryptor: the records
    /// after it open with application_traffic_secret_N+1, wherever they are opened.
    @Test func keyUpdateMovesTheDecryptorToTheNextSecret() throws {
        let cipher = TLSCipherParameters(aead: .aes128gcm, sha384: false)
        let secret = [UInt8](repeating: 7, count: 32)
        let next = try #require(TLSKeys.expandLabel(secret, "traffic upd", length: 32, sha384: false))
        let before = try #require(RecordProtection(tls13Secret: secret, cipher: cipher))
        let after = try #require(RecordProtection(tls13Secret: next, cipher: cipher))
        func record(_ p: RecordProtection, _ content: [UInt8], type: UInt8) throws -> TLSRecordReader.Record {
            let body = try #require(p.seal(type: 23, version: 0x0303, plaintext: content + [type]))
            return TLSRecordReader.Record(type: 23, body: body, length: body.count, firstByte: .zero, lastByte: .zero)
        }
        let records = [
            try record(before, Array("first".utf8), type: 23),
            try record(before, [24, 0, 0, 1, 0], type: 22),   // KeyUpdate, update_not_requested
            try record(after, Array("second".utf8), type: 23),
        ]
        let decryptor = DirectionDecryptor(protection: try #require(RecordProtection(tls13Secret: secret, cipher: cipher)),
                                           secret: secret, cipher: cipher, tls13: true)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 15, alignment: 16)
        defer { out.deallocate() }
        var opened: [String] = []
        for r in records {
            switch decryptor.open(r, into: out) {
            case .data(let n): opened.append(String(decoding: UnsafeRawBufferPointer(rebasing: out[0..<n]), as: UTF8.self))
            case .handshake: opened.append("handshake")
            default: opened.append("failed")
            }
        }
        #expect(opened == ["first", "handshake", "second"])
    }
}

/// Passes every call on to two sinks.
final class TeeSink: TransactionSink {
    let first: TransactionSink, second: TransactionSink
    init(_ first: TransactionSink, _ second: TransactionSink) { self.first = first; self.second = second }
    func consume(_ transaction: Transaction) { first.consume(transaction); second.consume(transaction) }
    func connectionFinished(_ connection: Connection) { first.connectionFinished(connection); second.connectionFinished(connection) }
}
