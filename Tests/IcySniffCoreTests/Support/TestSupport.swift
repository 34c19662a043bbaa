import Foundation
import Testing
@testable import IcySniffCore

/// Paths of the package, its sample captures and the corpus captures the tests use.
enum Paths {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let captures = packageRoot.appendingPathComponent("captures")
    /// Copies of the corpus captures that unit tests read (Tests/Fixtures/corpus/README.md), so a
    /// clone of the repository alone runs them; `../shared` is for the conformance tests only.
    static let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures/corpus")
    static let golden = packageRoot.appendingPathComponent("Tests/Golden")

    static func corpusFile(_ relative: String) -> String { fixtures.appendingPathComponent(relative).path }
}

/// Collects what a pipeline emits.
final class CollectingSink: TransactionSink {
    var transactions: [Transaction] = []
    var connections: [ConnectionSummary] = []
    func consume(_ transaction: Transaction) { transactions.append(transaction) }
    func connectionFinished(_ connection: Connection) { connections.append(ConnectionSummary(connection)) }
}

/// One TCP connection written segment by segment into a pipeline (client 10.0.0.2:40000,
/// server 10.0.0.1:80), each a millisecond after the one before unless told otherwise.
class TCPWire {
    let pipeline: Pipeline
    let client: Endpoint
    let server = Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 80)
    var t: Int64 = 1_700_000_000_000_000_000

    init(sink: TransactionSink) {
        pipeline = Pipeline(sink: sink)
        client = Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: 40000)
    }

    /// Another connection (client port `clientPort`, address `clientAddress`) into a pipeline
    /// of the caller's making.
    init(pipeline: Pipeline, clientPort: UInt16, clientAddress: UInt32 = 0x0A00_0002) {
        self.pipeline = pipeline
        client = Endpoint(address: IPAddress(ipv4: clientAddress), port: clientPort)
    }

    func send(fromClient: Bool, _ flags: TCPFlags = [.ack, .psh], seq: UInt32, ack: UInt32 = 0, _ text: String = "", after ms: Int64 = 1) {
        t += ms * 1_000_000
        Array(text.utf8).withUnsafeBytes { raw in
            pipeline.ingest(TCPSegment(source: fromClient ? client : server, destination: fromClient ? server : client,
                                       sequence: seq, acknowledgement: ack, flags: flags, payload: raw,
                                       timestamp: Timestamp(nanoseconds: t)))
        }
    }
}

/// A `TCPWire` whose pipeline's transactions and connections are collected.
class CollectingWire: TCPWire {
    let sink: CollectingSink
    init() {
        let sink = CollectingSink()
        self.sink = sink
        super.init(sink: sink)
    }
}

/// Runs the whole pipeline over a capture file.
func analyse(_ path: String, options: PipelineOptions = PipelineOptions()) throws -> (CollectingSink, SourceOutcome, RunStats) {
    let sink = CollectingSink()
    let pipeline = Pipeline(sink: sink, options: options)
    let source = try PcapSource.open(path: path)
    let outcome = pipeline.run(source)
    pipeline.finish()
    return (sink, outcome, pipeline.stats)
}

/// A conversation written as `>>>` (client) and `<<<` (server) blocks, in the style of
/// Suricata's htp tests, turned into TCP segments cut at any size.
struct Transcript {
    enum Side { case client, server }
    var blocks: [(Side, [UInt8])]
    /// Blocks whose bytes are missing from the capture (their sequence numbers are used up, so
    /// what follows them is a gap for the reassembly).
    var lostBlocks: Set<Int> = []

    init(_ text: String) {
        var blocks: [(Side, [UInt8])] = []
        var current: (Side, [UInt8])? = nil
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            if line == ">>>" || line == "<<<" {
                if let c = current { blocks.append(c) }
                current = (line == ">>>" ? .client : .server, [])
                continue
            }
            guard current != nil else { continue }
            current!.1.append(contentsOf: Array(line.utf8) + [0x0A])
        }
        if let c = current { blocks.append(c) }
        // Lines are written with "\n"; the wire has CRLF unless a line ends with a literal "\\n".
        self.blocks = blocks.map { side, bytes in
            var out: [UInt8] = []
            var i = 0
            while i < bytes.count {
                if bytes[i] == 0x5C, i + 2 < bytes.count, bytes[i + 1] == 0x6E, bytes[i + 2] == 0x0A {
                    out.append(0x0A); i += 3; continue      // "\n" then newline: a bare LF
                }
                if bytes[i] == 0x5C, i + 1 < bytes.count, bytes[i + 1] == 0x0A {
                    i += 2; continue                           // "\" at line end: no line break at all
                }
                if bytes[i] == 0x0A { out.append(0x0D); out.append(0x0A) } else { out.append(bytes[i]) }
                i += 1
            }
            return (side, out)
        }
    }

    init(blocks: [(Side, [UInt8])]) { self.blocks = blocks }

    /// Runs the conversation through reassembly, HTTP and pairing with every block cut into
    /// segments of `segmentSize` bytes (0: one segment per block).
    func run(segmentSize: Int = 0, options: HTTPParserOptions = HTTPParserOptions(), handshake: Bool = true,
             clientISN: UInt32 = 1000, serverISN: UInt32 = 5000) -> [Transaction] {
        collect(segmentSize: segmentSize, options: options, handshake: handshake, clientISN: clientISN, serverISN: serverISN).transactions
    }

    /// `run`, with the connections too.
    func collect(segmentSize: Int = 0, options: HTTPParserOptions = HTTPParserOptions(), handshake: Bool = true,
                 clientISN: UInt32 = 1000, serverISN: UInt32 = 5000, limits: ReassemblyLimits = ReassemblyLimits()) -> CollectingSink {
        let sink = CollectingSink()
        feed(sink, segmentSize: segmentSize, options: options, handshake: handshake, clientISN: clientISN, serverISN: serverISN, limits: limits)
        return sink
    }

    /// The conversation through a pipeline into `sink` (a writer, for output tests).
    func feed(_ sink: TransactionSink, segmentSize: Int = 0, options: HTTPParserOptions = HTTPParserOptions(), handshake: Bool = true,
              clientISN: UInt32 = 1000, serverISN: UInt32 = 5000, limits: ReassemblyLimits = ReassemblyLimits()) {
        var pipelineOptions = PipelineOptions()
        pipelineOptions.http = options
        pipelineOptions.reassembly = limits
        let pipeline = Pipeline(sink: sink, options: pipelineOptions)
        let client = Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: 40000)
        let server = Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 80)
        var clientSeq = clientISN, serverSeq = serverISN
        var t: Int64 = 1_700_000_000_000_000_000
        func tick() -> Timestamp { t += 1_000_000; return Timestamp(nanoseconds: t) }
        func send(_ from: Side, _ flags: TCPFlags, _ payload: [UInt8]) {
            let (src, dst) = from == .client ? (client, server) : (server, client)
            let seq = from == .client ? clientSeq : serverSeq
            let ack = from == .client ? serverSeq : clientSeq
            payload.withUnsafeBytes { raw in
                pipeline.ingest(TCPSegment(source: src, destination: dst, sequence: seq, acknowledgement: ack,
                                           flags: flags, payload: raw, timestamp: tick()))
            }
            let consumed = UInt32(payload.count) &+ (flags.contains(.syn) || flags.contains(.fin) ? 1 : 0)
            if from == .client { clientSeq = clientSeq &+ consumed } else { serverSeq = serverSeq &+ consumed }
        }
        if handshake {
            send(.client, [.syn], [])
            send(.server, [.syn, .ack], [])
            send(.client, [.ack], [])
        }
        for (index, (side, bytes)) in blocks.enumerated() {
            if lostBlocks.contains(index) {
                if side == .client { clientSeq = clientSeq &+ UInt32(bytes.count) } else { serverSeq = serverSeq &+ UInt32(bytes.count) }
                continue
            }
            let size = segmentSize > 0 ? segmentSize : max(1, bytes.count)
            var i = 0
            while i < bytes.count {
                send(side, [.ack, .psh], Array(bytes[i..<min(bytes.count, i + size)]))
                i += size
            }
        }
        send(.client, [.fin, .ack], [])
        send(.server, [.fin, .ack], [])
        pipeline.finish()
    }
}

/// Runs a transcript with each block in one segment, then cut into segments of every size from
/// 1 to 24 bytes (llhttp's "scan" mode): the transactions' summaries must be `expected` each time.
func expectAtEverySegmenting(_ transcript: Transcript, _ expected: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    let whole = transcript.run().map(summary)
    #expect(whole == expected, "one segment per block", sourceLocation: sourceLocation)
    for size in 1...24 {
        let split = transcript.run(segmentSize: size).map(summary)
        #expect(split == whole, "segments of \(size) bytes", sourceLocation: sourceLocation)
        if split != whole { break }
    }
}

/// A one-line summary of a transaction for comparisons.
func summary(_ t: Transaction) -> String {
    let req = t.request.map { "\($0.method) \($0.targetString) \($0.versionText) body=\($0.body.decodedBytes)" } ?? "-"
    let resp = t.response.map { "\($0.status) body=\($0.body.decodedBytes)/\($0.body.bytes)" } ?? "-"
    let flags = t.allWeirds.map(\.rawValue).joined(separator: ",")
    return "\(req) -> \(resp) [\(flags)]"
}
