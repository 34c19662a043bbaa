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
    static func run(_ path: String, keys: String?, thread: Int?) throws -> Run {
        var options = PipelineOptions()
        options.keyLog = try keys.map { try KeyLog(paths: [$0]) }
        options.decryptOnSecondThreadAfter = thread
        let har = HARWriter()
        let collected = CollectingSink()
        let pipeline = Pipeline(sink: TeeSink(har, collected), options: options)
        let source = try PcapSource.open(path: path)
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

    static func expectSameOutputs(_ path: String, keys: String?, onTheThread: Bool = true) throws {
        let here = try run(path, keys: keys, thread: nil)
        let threaded = try run(path, keys: keys, thread: 0)
        #expect(here.onSecondThread == 0)
        #expect((threaded.onSecondThread > 0) == onTheThread, "\(path): \(threaded.onSecondThread) records on the thread")
        #expect(threaded.decrypted > 0 && threaded.decrypted == here.decrypted, "\(path)")
        #expect(firstDifference(threaded.ndjson, here.ndjson) == nil, "\(path): NDJSON")
        #expect(firstDifference(threaded.har, here.har) == nil, "\(path): HAR")
        #expect(threaded.weirds == here.weirds, "\(path)")
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

    /// A record that does not authenticate is flagged the same way on the thread, and nothing
    /// after it in its direction is passed on.
    @Test func aTamperedRecordIsFlaggedOnTheThreadToo() throws {
        var data = try Data(contentsOf: Paths.captures.appendingPathComponent("tls-sample.pcap"))
        var offset = 24, largest = (offset: 0, length: 0)
        while offset + 16 <= data.count {
            let caplen = Int(data[offset + 8]) | Int(data[offset + 9]) << 8 | Int(data[offset + 10]) << 16 | Int(data[offset + 11]) << 24
            if caplen > largest.length { largest = (offset + 16, caplen) }
            offset += 16 + caplen
        }
        data[largest.offset + largest.length - 40] ^= 0x01
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("queue-tampered-\(getpid()).pcap")
        try data.write(to: path)
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
