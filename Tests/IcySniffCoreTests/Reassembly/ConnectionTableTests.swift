import Testing
@testable import IcySniffCore

/// Records what reassembly delivers for each direction.
final class RecordingHandler: StreamHandler {
    var data = PerDirection<[UInt8]>([])
    var gaps = PerDirection<[(UInt64, UInt64)]>([])
    var ended = PerDirection(false)
    var finished = false

    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        #expect(chunk.offset == UInt64(data[direction].count), "chunks arrive in stream order")
        data[direction].append(contentsOf: chunk.bytes)
    }
    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        #expect(gap.offset == UInt64(data[direction].count))
        gaps[direction].append((gap.offset, gap.length))
        data[direction].append(contentsOf: repeatElement(0, count: Int(gap.length)))
    }
    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) { ended[direction] = true }
    func finished(_ connection: Connection, at timestamp: Timestamp) { finished = true }
}

/// A small deterministic generator (SplitMix64), so every failure can be replayed from its seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct ConnectionTableTests {
    let client = Endpoint(address: IPAddress(ipv4: 0xC0A8_0001), port: 51000)
    let server = Endpoint(address: IPAddress(ipv4: 0xC0A8_0002), port: 80)

    struct Segment { var offset: Int; var length: Int }

    /// Cuts `stream` into random segments, shuffles them within a window, duplicates and overlaps
    /// some, drops `dropped` of them, and feeds them with the ISN near the 2^32 wrap.
    func run(seed: UInt64, streamLength: Int, drop: Int) -> (stream: [UInt8], handler: RecordingHandler, dropped: [Segment]) {
        var rng = SplitMix(state: seed)
        let stream = (0..<streamLength).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var segments: [Segment] = []
        var offset = 0
        while offset < streamLength {
            let length = min(streamLength - offset, Int.random(in: 1...300, using: &rng))
            segments.append(Segment(offset: offset, length: length))
            offset += length
        }
        // Drop some segments, never the last (so the stream end is known from data).
        var dropped: [Segment] = []
        var dropIndexes = Set<Int>()
        while dropIndexes.count < min(drop, max(0, segments.count - 2)) {
            dropIndexes.insert(Int.random(in: 1..<(segments.count - 1), using: &rng))
        }
        for i in dropIndexes.sorted() { dropped.append(segments[i]) }
        var sent = segments.enumerated().filter { !dropIndexes.contains($0.offset) }.map(\.element)
        // Duplicates and overlapping retransmissions of kept segments.
        for _ in 0..<(sent.count / 5) {
            let s = sent[Int.random(in: 0..<sent.count, using: &rng)]
            sent.append(s)
            let extra = Segment(offset: s.offset + s.length / 2, length: max(1, s.length / 2))
            if !dropped.contains(where: { $0.offset < extra.offset + extra.length && extra.offset < $0.offset + $0.length }) {
                sent.append(extra)
            }
        }
        // Reorder within a window of 6.
        var i = 0
        while i < sent.count {
            let j = min(sent.count - 1, i + Int.random(in: 0...5, using: &rng))
            sent.swapAt(i, j)
            i += 1
        }
        let isn: UInt32 = 0xFFFF_FFFF &- UInt32.random(in: 0...20_000, using: &rng)
        var handler: RecordingHandler? = nil
        let table = ConnectionTable<RecordingHandler> { _ in
            let h = RecordingHandler()
            handler = h
            return h
        }
        var t: Int64 = 1_000_000_000
        func feed(_ from: Endpoint, _ to: Endpoint, seq: UInt32, ack: UInt32, flags: TCPFlags, _ bytes: ArraySlice<UInt8>) {
            t += 1000
            bytes.withUnsafeBytes { raw in
                table.ingest(TCPSegment(source: from, destination: to, sequence: seq, acknowledgement: ack, flags: flags,
                                        payload: raw, timestamp: Timestamp(nanoseconds: t)))
            }
        }
        feed(client, server, seq: isn, ack: 0, flags: [.syn], [])
        feed(server, client, seq: 7, ack: isn &+ 1, flags: [.syn, .ack], [])
        feed(client, server, seq: isn &+ 1, ack: 8, flags: [.ack], [])
        for s in sent {
            feed(client, server, seq: isn &+ 1 &+ UInt32(s.offset), ack: 8, flags: [.ack], stream[s.offset..<(s.offset + s.length)])
        }
        feed(client, server, seq: isn &+ 1 &+ UInt32(streamLength), ack: 8, flags: [.fin, .ack], [])
        table.flushAll(at: Timestamp(nanoseconds: t + 1))
        return (stream, handler!, dropped)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] as [UInt64])
    func reorderedDuplicatedOverlappingSegmentsReassembleExactly(seed: UInt64) {
        let (stream, handler, _) = run(seed: seed, streamLength: 20_000, drop: 0)
        #expect(handler.data.fromClient == stream, "seed \(seed)")
        #expect(handler.gaps.fromClient.isEmpty, "seed \(seed)")
        #expect(handler.ended.fromClient && handler.finished)
    }

    @Test(arguments: [21, 22, 23, 24, 25, 26] as [UInt64])
    func droppedSegmentsBecomeGapsOfTheRightLengthAndOffset(seed: UInt64) {
        let (stream, handler, dropped) = run(seed: seed, streamLength: 20_000, drop: 3)
        // Adjacent dropped segments merge into one gap.
        var expected: [(UInt64, UInt64)] = []
        for d in dropped.sorted(by: { $0.offset < $1.offset }) {
            if let last = expected.last, last.0 + last.1 == UInt64(d.offset) {
                expected[expected.count - 1].1 += UInt64(d.length)
            } else {
                expected.append((UInt64(d.offset), UInt64(d.length)))
            }
        }
        #expect(handler.gaps.fromClient.map(\.0) == expected.map(\.0), "seed \(seed)")
        #expect(handler.gaps.fromClient.map(\.1) == expected.map(\.1), "seed \(seed)")
        var masked = stream
        for d in dropped { for i in d.offset..<(d.offset + d.length) { masked[i] = 0 } }
        #expect(handler.data.fromClient == masked, "data plus gaps add up to the stream, seed \(seed)")
    }

    @Test func conflictingRetransmissionIsRecordedAndFirstCopyWins() {
        var handler: RecordingHandler? = nil
        var connection: Connection? = nil
        let table = ConnectionTable<RecordingHandler> { c in
            connection = c
            let h = RecordingHandler(); handler = h; return h
        }
        let a = Array("AAAA".utf8), b = Array("BBBB".utf8), c = Array("CCCC".utf8)
        func feed(_ seq: UInt32, _ bytes: [UInt8], flags: TCPFlags = [.ack]) {
            bytes.withUnsafeBytes { raw in
                table.ingest(TCPSegment(source: client, destination: server, sequence: seq, acknowledgement: 1,
                                        flags: flags, payload: raw, timestamp: Timestamp(nanoseconds: 1)))
            }
        }
        feed(100, [], flags: [.syn])
        feed(101, a)          // in order
        feed(109, c)          // out of order, buffered
        feed(109, b)          // conflicting copy of buffered bytes
        feed(105, a)          // fills the hole
        table.flushAll(at: Timestamp(nanoseconds: 2))
        #expect(handler?.data.fromClient == a + a + c)
        #expect(connection?.weirds[.retransmissionInconsistency] == 1)
    }

    @Test func midstreamPickupAndPortReuse() {
        var handlers: [RecordingHandler] = []
        var connections: [Connection] = []
        let table = ConnectionTable<RecordingHandler> { c in
            connections.append(c)
            let h = RecordingHandler(); handlers.append(h); return h
        }
        func feed(_ from: Endpoint, _ to: Endpoint, _ seq: UInt32, _ flags: TCPFlags, _ text: String) {
            Array(text.utf8).withUnsafeBytes { raw in
                table.ingest(TCPSegment(source: from, destination: to, sequence: seq, acknowledgement: 1,
                                        flags: flags, payload: raw, timestamp: Timestamp(nanoseconds: 1)))
            }
        }
        feed(client, server, 5000, [.ack], "mid-stream")
        feed(client, server, 5010, [.fin, .ack], "")
        feed(server, client, 9, [.fin, .ack], "")
        // Same ports again, a new handshake: a new connection.
        feed(client, server, 100, [.syn], "")
        feed(client, server, 101, [.ack], "second")
        table.flushAll(at: Timestamp(nanoseconds: 5))
        #expect(connections.count == 2)
        #expect(String(decoding: handlers[0].data.fromClient, as: UTF8.self) == "mid-stream")
        #expect(connections[0].weirds[.midstreamPickup] == 1)
        #expect(String(decoding: handlers[1].data.fromClient, as: UTF8.self) == "second")
    }
}
