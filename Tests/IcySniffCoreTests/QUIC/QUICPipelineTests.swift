import Foundation
import Testing
@testable import IcySniffCore

/// Client Initial packets made as a QUIC client makes them (RFC 9000 §17.2.2, RFC 9001 §5), for
/// the shapes real captures rarely show: a ClientHello over several Initial packets in any
/// order, coalesced packets with junk after them.
struct QUICClientWire {
    let dcid: [UInt8]
    let scid: [UInt8] = [0xaa, 0xbb, 0xcc, 0xdd]
    let client: Endpoint
    let server = Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 8443)
    let keys: QUICPacketKeys

    /// Client `n`'s wire: its own port and connection ID.
    init(_ n: Int = 0) {
        dcid = [0x11, 0x22, 0x33, 0x44, UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n), 0x88]
        client = Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: UInt16(50000 + n % 10000))
        keys = QUICPacketKeys.initial(dcid: dcid, version: QUICVersion(QUICVersion.v1)!, server: false)!
    }

    /// A TLS 1.3 ClientHello offering `sni` and ALPN h3 (handshake message header included).
    static func clientHello(sni: String) -> [UInt8] {
        func vector(_ bytes: [UInt8], _ n: Int) -> [UInt8] {
            (0..<n).reversed().map { UInt8(truncatingIfNeeded: bytes.count >> (8 * $0)) } + bytes
        }
        let name = Array(sni.utf8)
        let sniExt = [0, 0] + vector(vector([0] + vector(name, 2), 2), 2)
        let alpnExt = [0, 16] + vector(vector(vector(Array("h3".utf8), 1), 2), 2)
        let versions = [0, 43] + vector(vector([0x03, 0x04], 1), 2)
        var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 0x42, count: 32) + [0]
        body += vector([0x13, 0x01], 2) + [1, 0] + vector(sniExt + alpnExt + versions, 2)
        return [1] + vector(body, 3)
    }

    static func crypto(_ data: ArraySlice<UInt8>, at offset: Int) -> [UInt8] {
        [0x06, 0x40 | UInt8(offset >> 8), UInt8(offset & 0xff), 0x40 | UInt8(data.count >> 8), UInt8(data.count & 0xff)] + data
    }

    /// A protected Initial packet with packet number `pn` carrying `frames`, padded to 1,200 bytes.
    func initial(_ frames: [UInt8], pn: UInt64) -> [UInt8] {
        var header: [UInt8] = [0xc1, 0, 0, 0, 1, UInt8(dcid.count)] + dcid + [UInt8(scid.count)] + scid + [0]
        let payload = frames + [UInt8](repeating: 0, count: max(0, 1200 - header.count - 4 - frames.count - 16))
        let length = 2 + payload.count + 16
        header += [0x40 | UInt8(length >> 8), UInt8(length & 0xff)]
        let pnOffset = header.count
        header += [UInt8(pn >> 8), UInt8(pn & 0xff)]
        let sealed = keys.seal(packetNumber: pn, header: header, plaintext: payload)!
        let mask = sealed.withUnsafeBytes { keys.mask(UnsafeRawBufferPointer(rebasing: $0[2..<18]))! }
        header[0] ^= mask.0 & 0x0f
        header[pnOffset] ^= mask.1
        header[pnOffset + 1] ^= mask.2
        return header + sealed
    }

    func send(_ datagram: [UInt8], to pipeline: Pipeline, at ms: Int64) {
        datagram.withUnsafeBytes {
            pipeline.ingest(UDPDatagram(source: client, destination: server, payload: $0, timestamp: Timestamp(nanoseconds: 1_700_000_000_000_000_000 + ms * 1_000_000)))
        }
    }
}

@Suite struct QUICPipelineTests {
    static func permutations(_ a: [Int]) -> [[Int]] {
        guard a.count > 1 else { return [a] }
        return a.indices.flatMap { i in permutations(Array(a[..<i] + a[(i + 1)...])).map { [a[i]] + $0 } }
    }

    /// A ClientHello over three Initial packets, in every order: the same facts each time.
    @Test(arguments: permutations([0, 1, 2]))
    func clientHelloOverSeveralInitials(_ order: [Int]) throws {
        let wire = QUICClientWire()
        let hello = QUICClientWire.clientHello(sni: "split.example")
        let cut = [0, hello.count / 3, 2 * hello.count / 3, hello.count]
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink)
        for (i, part) in order.enumerated() {
            let frame = QUICClientWire.crypto(hello[cut[part]..<cut[part + 1]], at: cut[part])
            wire.send(wire.initial(frame, pn: UInt64(part)), to: pipeline, at: Int64(i))
        }
        pipeline.finish()
        let c = try #require(sink.connections.first)
        #expect(sink.connections.count == 1 && c.transport == .quic)
        #expect(c.tls?.sni == "split.example")
        #expect(c.tls?.alpnOffered == ["h3"])
        #expect(c.quic?.cids.originalDCID == wire.dcid && c.quic?.cids.clientCID == wire.scid)
        #expect(c.quic?.packetsDecrypted == 3)
        #expect(pipeline.stats.quicConnections == 1)
    }

    /// The ClientHello's first Initial never captured: the connection is listed from what its
    /// other Initial shows, and a key log cannot be searched without the random, which is said
    /// (`quic_client_hello_unreadable`), not blamed on the key log (`quic_keys_not_found`).
    @Test func aClientHelloWithoutItsStartIsSaidUnreadable() throws {
        let wire = QUICClientWire()
        let hello = QUICClientWire.clientHello(sni: "split.example")
        let half = hello.count / 2
        let sink = CollectingSink()
        var options = PipelineOptions()
        options.keyLog = KeyLog(text: "CLIENT_HANDSHAKE_TRAFFIC_SECRET " + String(repeating: "42", count: 32) + " " + String(repeating: "01", count: 32) + "\n")
        let pipeline = Pipeline(sink: sink, options: options)
        wire.send(wire.initial(QUICClientWire.crypto(hello[half...], at: half), pn: 1), to: pipeline, at: 0)
        pipeline.finish()
        let c = try #require(sink.connections.first)
        let weirds = Set(c.weirds.map(\.0))
        #expect(weirds.contains(.quicClientHelloUnreadable) && !weirds.contains(.quicKeysNotFound), "\(weirds)")
        #expect(c.tls?.sni == nil && c.quic?.packetsDecrypted == 1)
    }

    /// Two packets coalesced in one datagram (RFC 9000 §12.2), junk after them: both read, the
    /// junk ignored.
    @Test func coalescedWithJunk() throws {
        let wire = QUICClientWire()
        let hello = QUICClientWire.clientHello(sni: "coalesced.example")
        let half = hello.count / 2
        var first = wire.initial(QUICClientWire.crypto(hello[0..<half], at: 0), pn: 0)
        // Not padded: the datagram is, by the second packet.
        first = Array(first)
        let datagram = first + wire.initial(QUICClientWire.crypto(hello[half...], at: half), pn: 1) + [UInt8](repeating: 0xEE, count: 37)
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink)
        wire.send(datagram, to: pipeline, at: 0)
        pipeline.finish()
        let c = try #require(sink.connections.first)
        #expect(c.tls?.sni == "coalesced.example")
        #expect(c.quic?.packetsDecrypted == 2)
    }

    /// Short headers whose fixed bit is 0 (greased, RFC 9287: ngtcp2 does it to about half its
    /// packets) on a connection the tracker found by its address pair (a DCID it does not know;
    /// an empty one, Chromium's client side): each is the packet its datagram begins with, so
    /// its request and response are measured without keys. They were taken for junk, and the
    /// exchange they carried was never counted.
    @Test func greasedShortHeadersFoundByTheirAddresses() throws {
        let wire = QUICClientWire()
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink)
        wire.send(wire.initial(QUICClientWire.crypto(QUICClientWire.clientHello(sni: "grease.example")[...], at: 0), pn: 0), to: pipeline, at: 0)
        // First byte 0x01: short header, fixed bit 0; then a DCID that neither side announced.
        func greased(_ count: Int) -> [UInt8] { [0x01] + [UInt8](repeating: 0x99, count: count - 1) }
        wire.send(greased(300), to: pipeline, at: 20)
        greased(1200).withUnsafeBytes {
            pipeline.ingest(UDPDatagram(source: wire.server, destination: wire.client, payload: $0,
                                        timestamp: Timestamp(nanoseconds: 1_700_000_000_000_000_000 + 35 * 1_000_000)))
        }
        pipeline.finish()
        let c = try #require(sink.connections.first)
        let inferred = try #require(c.tls?.inferred)
        #expect(inferred.protocolName == "h3" && inferred.exchangeCount == 1, "\(inferred)")
        let exchange = try #require(inferred.exchanges.first)
        #expect(exchange.requestBytes == 300 - 1 - 16 - QUICPacketPattern.framing)
        #expect(exchange.responseStart == Timestamp(nanoseconds: 1_700_000_000_000_000_000 + 35 * 1_000_000))
    }

    /// More QUIC connections than are followed at once (half of `--max-connections`): the longest
    /// idle quarter is ended early, flagged `connection_evicted`, and every one is still listed
    /// with what it showed (past 65,536 they were neither followed nor named, and 100,000 took
    /// 858 MiB).
    @Test func aFloodOfConnectionsIsEvictedAndNamed() throws {
        let sink = CollectingSink()
        var options = PipelineOptions()
        options.reassembly.maxConnections = 32
        let pipeline = Pipeline(sink: sink, options: options)
        for n in 0..<100 {
            let wire = QUICClientWire(n)
            wire.send(wire.initial(QUICClientWire.crypto(QUICClientWire.clientHello(sni: "c\(n).example")[...], at: 0), pn: 0), to: pipeline, at: Int64(n))
        }
        pipeline.finish()
        #expect(sink.connections.count == 100 && pipeline.stats.quicConnections == 100)
        #expect(Set(sink.connections.compactMap { $0.tls?.sni }) == Set((0..<100).map { "c\($0).example" }))
        let evicted = sink.connections.filter { c in c.weirds.contains { $0.0 == .connectionEvicted } }
        // 16 followed at once: each round ends the 4 longest idle (the oldest here).
        #expect(evicted.count == 84 && pipeline.stats.weirds[.connectionEvicted] == 84, "\(evicted.count)")
        #expect(Set(evicted.compactMap { $0.tls?.sni }) == Set((0..<84).map { "c\($0).example" }))
    }

    /// A large UDP datagram that only looks like a long header is not a QUIC connection.
    @Test func notQUIC() {
        let wire = QUICClientWire()
        var junk = [UInt8](repeating: 0x5A, count: 1250)
        junk[0] = 0xc3
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink)
        wire.send(junk, to: pipeline, at: 0)
        // A known version whose Initial does not decrypt: never confirmed either.
        junk[1...4] = [0, 0, 0, 1]
        wire.send(junk, to: pipeline, at: 1)
        pipeline.finish()
        #expect(sink.connections.isEmpty)
        #expect(pipeline.stats.quicConnections == 0)
    }
}

/// The recorded HTTP/3 fixtures (aioquic client and server, Tests/Fixtures/quic, from
/// the QUIC conformance corpus): what shows without keys, and the transactions with them.
@Suite struct QUICCaptureTests {
    static func run(_ name: String, keys: Bool, shuffleWindow: Int = 0) throws -> (CollectingSink, RunStats) {
        var options = PipelineOptions()
        if keys { options.keyLog = try KeyLog(paths: ["Tests/Fixtures/quic/\(name).keys"]) }
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink, options: options)
        let source = try PcapSource.open(path: "Tests/Fixtures/quic/\(name).pcap")
        if shuffleWindow == 0 {
            _ = pipeline.run(source)
        } else {
            // The datagrams in another order: reversed in windows of `shuffleWindow` (CRYPTO and
            // STREAM data out of order, acknowledged packets after their successors).
            var packets: [(bytes: [UInt8], ts: Timestamp, wire: Int)] = []
            while case .packet(let p) = source.next() { packets.append((Array(p.bytes), p.timestamp, p.wireLength)) }
            var decoder = PacketDecoder(linkType: source.linkType)
            var i = 0
            while i < packets.count {
                let window = packets[i..<min(packets.count, i + shuffleWindow)]
                for p in window.reversed() {
                    p.bytes.withUnsafeBytes { pipeline.process(CapturedPacket(bytes: $0, timestamp: p.ts, wireLength: p.wire), decoder: &decoder) }
                }
                i += shuffleWindow
            }
        }
        pipeline.finish()
        return (sink, pipeline.stats)
    }

    @Test func keyless() throws {
        let (sink, stats) = try Self.run("h3-concurrent-qpack-statuses", keys: false)
        #expect(sink.transactions.isEmpty)
        let c = try #require(sink.connections.first)
        #expect(c.transport == .quic && stats.quicConnections == 1 && stats.quicDecrypted == 0)
        #expect(c.tls?.sni == "www.icy.test" && c.tls?.cipherSuite == 0x1302 && c.tls?.alpn == nil)
        #expect(QUICInfo.hex(c.quic!.cids.originalDCID) == "4b7388933c139d8c")
        #expect(QUICInfo.hex(c.quic!.cids.serverCID!) == "4bb3346ce8d8ab12")
        #expect(abs((c.quic?.handshakeMilliseconds ?? 0) - 9.343) < 0.01)
        #expect(c.quic?.version == QUICVersion.v1 && c.quic?.decrypted == false)
    }

    @Test(arguments: [0, 3, 8])
    func keyed(shuffleWindow: Int) throws {
        let (sink, stats) = try Self.run("h3-concurrent-qpack-statuses", keys: true, shuffleWindow: shuffleWindow)
        #expect(stats.quicDecrypted == 1)
        let statuses = sink.transactions.map { $0.response?.status ?? 0 }.sorted()
        #expect(statuses == [200, 200, 200, 200, 200, 200, 200, 200, 204, 302, 304, 404, 405])
        #expect(sink.transactions.allSatisfy { $0.protocolName == "h3" && $0.host == "www.icy.test" && $0.allWeirds.isEmpty })
        let sizes = sink.transactions.map { Int($0.response?.body.decodedBytes ?? 0) }.sorted()
        #expect(sizes == [0, 0, 0, 6, 19, 36, 908, 1119, 1330, 1541, 2659, 5300, 9100])
        let first = try #require(sink.transactions.first { $0.depth == 1 })
        #expect(first.timings.ssl >= 0 && first.timings.connect >= first.timings.ssl)
        #expect(sink.connections.first?.tls?.alpn == "h3")
    }

    /// ChaCha20-Poly1305, and a 1-RTT key update in the middle of the connection; with the
    /// datagrams reversed in windows, packets of the old key phase come after the first of the new
    /// one and must still open with the old keys (RFC 9001 §6.5).
    @Test(arguments: [0, 3, 4, 8])
    func keyUpdate(shuffleWindow: Int) throws {
        let (sink, _) = try Self.run("h3-chacha20-keyupdate", keys: true, shuffleWindow: shuffleWindow)
        #expect(sink.transactions.count == 5)
        #expect(sink.connections.first?.quic?.packetsUndecryptable == 0)
        #expect(sink.connections.first?.weirds.isEmpty == true)
        #expect(sink.transactions.map { $0.response?.body.decodedBytes ?? 0 }.sorted() == [336, 378, 421, 58000, 96000])
        #expect(sink.connections.first?.quic?.keyUpdates == 1)
        #expect(sink.connections.first?.tls?.cipherSuite == 0x1303)
    }

    /// Two connections the server ends with a stateless reset (RFC 9000 §10.3), recorded by
    /// scripts/record-quic-reset-sample: the first with the token of its transport parameters,
    /// the second with one of a NEW_CONNECTION_ID frame. With keys the tokens are known: the
    /// reset ends the connection and is not a packet that failed to decrypt; on the decryption
    /// thread too (from the first packet), where the reset comes in among packets still opening.
    /// Without keys nothing tells a reset from a packet: the connections end idle.
    @Test(arguments: [nil, 0] as [Int?])
    func statelessReset(thread: Int?) throws {
        var options = PipelineOptions()
        options.keyLog = try KeyLog(paths: ["Tests/Fixtures/quic/stateless-reset.keys"])
        options.decryptOnSecondThreadAfter = thread
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink, options: options)
        _ = pipeline.run(try PcapSource.open(path: "Tests/Fixtures/quic/stateless-reset.pcap"))
        pipeline.finish()
        #expect(sink.connections.count == 2)
        for c in sink.connections {
            #expect(c.quic?.end == "stateless_reset")
            #expect(c.quic?.packetsUndecryptable == 0 && c.weirds.isEmpty)
        }
        #expect(sink.transactions.map { $0.response?.status ?? 0 } == [200, 200])

        let (keyless, _) = try Self.run("stateless-reset", keys: false)
        #expect(keyless.connections.map { $0.quic?.end } == ["idle", "idle"])
    }

    /// 0-RTT (the corpus's h3-resume-0rtt, copied here): the second connection resumes with the
    /// first one's ticket and sends two GETs as 0-RTT before its handshake ends; accepted. The
    /// figures are the aioquic server's own log (the corpus's expected file); the same with the
    /// datagrams reversed in windows (0-RTT packets after the handshake's).
    @Test(arguments: [0, 3])
    func zeroRTT(shuffleWindow: Int) throws {
        let (sink, _) = try Self.run("h3-resume-0rtt", keys: true, shuffleWindow: shuffleWindow)
        let byConnection = Dictionary(grouping: sink.transactions, by: { $0.connection.id })
        #expect(sink.connections.count == 2 && byConnection.count == 2)
        let connections = sink.connections.sorted { $0.id < $1.id }
        let (first, resumed) = (connections[0], connections[1])
        #expect(first.tls?.resumed == false && first.quic?.zeroRTTPackets == 0)
        #expect(resumed.tls?.resumed == true && resumed.tls?.earlyDataOffered == true && resumed.tls?.earlyDataAccepted == true)
        #expect(resumed.quic?.zeroRTTPackets == 2)
        #expect(byConnection[first.id]?.map { $0.response?.body.decodedBytes ?? 0 } == [2659])
        #expect(byConnection[resumed.id]?.map { $0.response?.body.decodedBytes ?? 0 }.sorted() == [440, 5300, 9100])
        #expect(sink.transactions.allSatisfy { $0.response?.status == 200 && $0.allWeirds.isEmpty })
        #expect(connections.allSatisfy { $0.weirds.isEmpty && $0.quic?.packetsUndecryptable == 0 })
    }

    /// QUIC v2 from the first packet, a download the client cancels after about 100 kB
    /// (STOP_SENDING, then the server's RESET_STREAM), then NAT rebinding: the client's port
    /// changes, the connection IDs do not (the corpus's h3-v2-rebind-cancel, copied here).
    @Test func version2RebindingAndACancelledStream() throws {
        let (sink, _) = try Self.run("h3-v2-rebind-cancel", keys: true)
        let c = try #require(sink.connections.first)
        #expect(sink.connections.count == 1)
        #expect(c.quic?.version == QUICVersion.v2 && c.quic?.initialVersion == QUICVersion.v2)
        #expect(c.quic?.migrated == true && c.quic?.clientPorts == [56726, 40210])
        #expect(QUICInfo.hex(c.quic!.cids.originalDCID) == "288c7579f7af3c01")
        let ts = sink.transactions.sorted { $0.streamID ?? 0 < $1.streamID ?? 0 }
        #expect(ts.map { $0.response?.status ?? 0 } == [200, 200, 200, 200])
        #expect(ts.map(\.url) == ["https://www.icy.test/api/item-18.json", "https://www.icy.test/slow/stream-600k.bin",
                                  "https://www.icy.test/api/item-19.json", "https://www.icy.test/img/icon-05.png"])
        // The cancelled one is flagged and partial, never lost; the others whole.
        #expect(ts[1].allWeirds.contains(.http3StreamCancelled) && ts[1].allWeirds.contains(.responseIncomplete))
        #expect([ts[0], ts[2], ts[3]].map { $0.response?.body.decodedBytes ?? 0 } == [942, 985, 1963])
        #expect([ts[0], ts[2], ts[3]].allSatisfy { $0.allWeirds.isEmpty })
        // The two requests after the rebinding came from the new port, the first two from the old.
        #expect(ts.map { $0.connection.client.port } == [56726, 56726, 40210, 40210])
    }

    /// Timings read the connection's set-up, not a TCP handshake: a QUIC connection's first
    /// request gets the DNS lookup before it (2 ms in the fixture) as a TCP one does, and its
    /// connect and ssl are both its handshake (1 ms), none of it counted twice.
    @Test func timingsOfAQUICConnectionAfterItsLookup() throws {
        let (sink, _) = try Self.run("stateless-reset", keys: true)
        #expect(sink.transactions.count == 2)
        for t in sink.transactions {
            #expect(abs(t.timings.dns - 2) < 0.001)
            #expect(abs(t.timings.connect - 1) < 0.001 && t.timings.ssl == t.timings.connect)
            let handshake = try #require(t.connection.setup.secure?.start)
            #expect(abs(handshake.milliseconds(since: t.timings.start) - 3) < 0.001, "starts at the query")
            #expect(t.connection.setup.transport == nil && t.connection.setup.roundTripMilliseconds == nil)
        }
    }

    /// Wrong keys: flagged, nothing made up.
    @Test func wrongKeys() throws {
        var options = PipelineOptions()
        let log = try String(contentsOfFile: "Tests/Fixtures/quic/h3-concurrent-qpack-statuses.keys", encoding: .utf8)
        // The same client random, every secret's last byte changed.
        let tampered = log.split(separator: "\n").map { line -> String in
            let last = line.last == "0" ? "1" : "0"
            return String(line.dropLast()) + last
        }.joined(separator: "\n")
        options.keyLog = KeyLog(text: tampered)
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink, options: options)
        _ = pipeline.run(try PcapSource.open(path: "Tests/Fixtures/quic/h3-concurrent-qpack-statuses.pcap"))
        pipeline.finish()
        #expect(sink.transactions.isEmpty)
        let c = try #require(sink.connections.first)
        #expect(c.weirds.contains { $0.0 == .quicDecryptionFailed })
        #expect(c.quic?.decrypted == false && c.tls?.sni == "www.icy.test")
    }
}

/// 1-RTT packets opened on the decryption thread (as reading a file does once 1 MiB came; here
/// from the first packet) give the same HAR as packets opened as they come.
@Suite struct QUICDecryptionThreadTests {
    static func har(_ pcap: String, keys: String, thread: Int?) throws -> (har: [UInt8], onThread: Int) {
        var options = PipelineOptions()
        options.keyLog = try KeyLog(paths: [keys])
        options.decryptOnSecondThreadAfter = thread
        let har = HARWriter()
        let pipeline = Pipeline(sink: CacheJudgingSink(next: har), options: options)
        _ = pipeline.run(try PcapSource.open(path: pcap))
        pipeline.finish()
        let out = OutputFile(memory: true)
        har.write(to: out)
        return (out.takeBytes(), pipeline.recordsDecryptedOnSecondThread)
    }

    @Test(arguments: ["Tests/Fixtures/quic/h3-concurrent-qpack-statuses", "Tests/Fixtures/quic/h3-chacha20-keyupdate",
                      "Tests/Fixtures/quic/h3-resume-0rtt", "Tests/Fixtures/quic/h3-v2-rebind-cancel",
                      "Tests/Fixtures/quic/stateless-reset", "captures/h3-sample"])
    func sameOutputs(_ base: String) throws {
        let inline = try Self.har(base + ".pcap", keys: base + ".keys", thread: nil)
        let threaded = try Self.har(base + ".pcap", keys: base + ".keys", thread: 0)
        #expect(inline.har.count > 1000 && inline.onThread == 0)
        #expect(threaded.onThread > 10, "the packets went to the thread")
        #expect(inline.har == threaded.har)
    }

    /// Every client packet in a new key phase, 300 times (RFC 9001 §6 lets a peer update again
    /// once its previous update was acknowledged): each update is decided where its packet is
    /// read, so the packets behind it on the thread get the keys it made. When the update was
    /// applied only once its packet came back from the thread, every packet after the second
    /// update failed to decrypt and the request was lost.
    @Test func consecutiveKeyUpdatesOnTheThread() throws {
        let base = "Tests/Fixtures/quic/consecutive-key-updates"
        var options = PipelineOptions()
        options.keyLog = try KeyLog(paths: [base + ".keys"])
        options.decryptOnSecondThreadAfter = 0
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink, options: options)
        _ = pipeline.run(try PcapSource.open(path: base + ".pcap"))
        pipeline.finish()
        let c = try #require(sink.connections.first)
        #expect(c.quic?.keyUpdates == 300)
        #expect(c.quic?.packetsUndecryptable == 0 && c.weirds.isEmpty)
        #expect(sink.transactions.map { $0.response?.status ?? 0 } == [200])
        #expect(sink.transactions.first?.allWeirds.isEmpty == true)
        #expect(pipeline.recordsDecryptedOnSecondThread > 0, "packets of the current phase still went to the thread")
        let inline = try QUICDecryptionThreadTests.har(base + ".pcap", keys: base + ".keys", thread: nil)
        let threaded = try QUICDecryptionThreadTests.har(base + ".pcap", keys: base + ".keys", thread: 0)
        #expect(inline.har.count > 1000 && inline.har == threaded.har)
    }

    /// One bit of the packet number flipped in some of the server's 1-RTT packets (under header
    /// protection, the same bit of the decoded number: a jump of 32,768): those packets fail, and
    /// every other packet reads as it would without them, on the thread too. Prepared for the
    /// thread, a damaged number moved the largest packet number before it was known not to
    /// authenticate, and the packets after it were decoded against it and failed.
    @Test func damagedPacketNumbersOnTheThread() throws {
        let base = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/quic/h3-concurrent-qpack-statuses")
        var bytes = try [UInt8](Data(contentsOf: base.appendingPathExtension("pcap")))
        var damaged = 0, serverShort = 0
        for r in DecryptionQueueTests.pcapRecords(bytes) {
            // Ethernet, IPv4, UDP from port 443, a short header: its first packet-number byte
            // follows the 8-byte CID the aioquic client chose.
            let p = r.lowerBound + 16
            guard r.count > 16 + 64, bytes[p + 12] == 0x08, bytes[p + 13] == 0x00 else { continue }
            let udp = p + 14 + Int(bytes[p + 14] & 0x0f) * 4
            let quic = udp + 8
            guard bytes[udp] == 0x01, bytes[udp + 1] == 0xbb, bytes[quic] & 0x80 == 0 else { continue }
            serverShort += 1
            if serverShort > 8 && serverShort % 7 == 0 { bytes[quic + 1 + 8] ^= 0x80; damaged += 1 }
        }
        #expect(damaged >= 3)
        let dir = try DecryptionQueueTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("damaged.pcap").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let keys = base.appendingPathExtension("keys").path
        let inline = try DecryptionQueueTests.run(path, keys: keys, thread: nil)
        let threaded = try DecryptionQueueTests.run(path, keys: keys, thread: 0)
        #expect(inline.weirds[.quicDecryptionFailed] == UInt64(damaged), "only the damaged packets fail")
        #expect(threaded.onSecondThread > 10 && threaded.weirds == inline.weirds)
        #expect(inline.har.count > 1000 && inline.har == threaded.har)
    }
}
