import Foundation
import Testing
@testable import IcySniffCore

/// Live capture with a key log that is written as the capture runs (issue 15): a client logs a
/// connection's secrets only once the ServerHello has reached it, about when the capture sees
/// that ServerHello, and its application traffic secrets later still. The capture here is
/// replayed packet by packet while the key log is written at those moments; the transactions
/// must be those a complete key log gives.
@Suite struct GrowingKeyLogTests {
    static let capture = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/tls/nginx-curl-live.pcap").path
    static let keys = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/tls/nginx-curl-live.keys").path

    /// The key log's lines by client random (hex), in file order.
    static func keyLines() throws -> [String: [String]] {
        var out: [String: [String]] = [:]
        for line in try String(contentsOfFile: keys, encoding: .utf8).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 3 else { continue }
            out[String(parts[1]).lowercased(), default: []].append(String(line))
        }
        return out
    }

    enum Schedule: Equatable {
        /// Handshake secrets after the packet with the ServerHello, application traffic secrets
        /// (and TLS 1.2's master secret) after the client's next packet with data: that packet
        /// finds the secrets half written.
        case asClientsWriteThem
        /// Never: the client wrote no key log for these connections.
        case never
        /// All of a connection's secrets, this many packets after its ServerHello.
        case packetsAfterServerHello(Int)
    }

    /// Replays the capture with a growing key log written on `schedule`; `pause`: wait out the
    /// key log's recheck interval after each write, so the waiting connection reads it on
    /// the next packet (else it does at its end).
    /// `step`: packet i is stamped i × step seconds after the first (nil: as captured).
    static func replay(_ schedule: Schedule, pause: Bool, step: Double? = nil) throws -> CollectingSink {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-growing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let logPath = dir.appendingPathComponent("keys").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try KeyLog(paths: [logPath], growing: true)
        let handle = try #require(FileHandle(forWritingAtPath: logPath))
        defer { try? handle.close() }
        func write(_ lines: [String]) throws {
            guard !lines.isEmpty else { return }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8))
            if pause { Thread.sleep(forTimeInterval: KeyLog.recheckInterval * 2) }
        }
        let lines = try keyLines()
        var options = PipelineOptions()
        options.keyLog = log
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink, options: options)
        let source = try PcapSource.open(path: capture)
        var decoder = PacketDecoder(linkType: source.linkType)
        var inspector = PacketDecoder(linkType: source.linkType)
        var randomByClientPort: [UInt16: String] = [:]
        var trafficDueFromClientPort: [UInt16: [String]] = [:]
        var dueAfter: [(packets: Int, lines: [String])] = []
        var index = 0
        var first: Int64? = nil
        while case .packet(var packet) = source.next() {
            first = first ?? packet.timestamp.nanoseconds
            if let step { packet.timestamp = Timestamp(nanoseconds: first! + Int64(Double(index) * step * 1e9)) }
            index += 1
            pipeline.process(packet, decoder: &decoder)
            for k in dueAfter.indices { dueAfter[k].packets -= 1 }
            for due in dueAfter where due.packets == 0 { try write(due.lines) }
            dueAfter.removeAll { $0.packets <= 0 }
            guard case .tcp(let segment) = inspector.decode(packet) else { continue }
            let p = segment.payload
            if case .packetsAfterServerHello(let n) = schedule {
                if p.count > 43, p[0] == 22, p[5] == 1 {
                    randomByClientPort[segment.source.port] = p[11..<43].map { String(format: "%02x", $0) }.joined()
                } else if p.count > 43, p[0] == 22, p[5] == 2, let random = randomByClientPort[segment.destination.port] {
                    dueAfter.append((n, lines[random] ?? []))
                }
                continue
            }
            guard schedule == .asClientsWriteThem else { continue }
            if !p.isEmpty, let due = trafficDueFromClientPort.removeValue(forKey: segment.source.port) {
                try write(due)
            }
            guard p.count > 43, p[0] == 22, p[1] == 3 else { continue }
            if p[5] == 1 {
                randomByClientPort[segment.source.port] = p[11..<43].map { String(format: "%02x", $0) }.joined()
            } else if p[5] == 2, let random = randomByClientPort[segment.destination.port] {
                let all = lines[random] ?? []
                let handshake = all.filter { $0.contains("HANDSHAKE_TRAFFIC_SECRET") }
                try write(handshake)
                trafficDueFromClientPort[segment.destination.port] = all.filter { !handshake.contains($0) }
            }
        }
        pipeline.finish()
        return sink
    }

    static func summary(_ sink: CollectingSink) -> [String] {
        sink.transactions.map { t in
            "\(t.request?.method ?? "-") \(t.url) \(t.response?.status ?? 0) \(t.protocolName) \(t.timings.send) \(t.timings.wait) \(t.timings.receive)"
        }
    }

    @Test(arguments: [false, true])
    func secretsLoggedAfterTheServerHelloAreWaitedFor(pause: Bool) throws {
        var options = PipelineOptions()
        options.keyLog = try KeyLog(paths: [Self.keys])
        let (complete, _, _) = try analyse(Self.capture, options: options)
        let expected = Self.summary(complete)
        try #require(expected.count == 5, "\(expected)")
        #expect(expected.filter { $0.contains(" h2 ") }.count == 2)

        let growing = try Self.replay(.asClientsWriteThem, pause: pause)
        #expect(Self.summary(growing) == expected)
        #expect(growing.connections.allSatisfy { $0.tls?.decrypted == true })
        #expect(!growing.connections.contains { $0.weirds.contains { $0.0 == .tlsKeysNotFound } })
    }

    /// A connection waits for its secrets a second of capture time at most (most apps never log
    /// theirs, and what is held must cost little): secrets logged 0.3 s after the ServerHello
    /// decrypt; logged 1.8 s after it, they come too late, and the connection is flagged.
    @Test func aConnectionWaitsASecondAtMost() throws {
        let soon = try Self.replay(.packetsAfterServerHello(3), pause: false, step: 0.1)
        #expect(soon.transactions.count == 5)
        #expect(soon.connections.allSatisfy { $0.tls?.decrypted == true })
        let late = try Self.replay(.packetsAfterServerHello(3), pause: false, step: 0.6)
        #expect(late.transactions.isEmpty)
        #expect(late.connections.count == 3 && late.connections.allSatisfy { c in
            c.tls?.decrypted == false && c.weirds.contains { $0.0 == .tlsKeysNotFound }
        })
    }

    @Test func secretsNeverLoggedAreFlaggedAndTheHandshakeStillShown() throws {
        let sink = try Self.replay(.never, pause: false)
        #expect(sink.transactions.isEmpty)
        #expect(sink.connections.count == 3)
        for c in sink.connections {
            #expect(c.weirds.contains { $0.0 == .tlsKeysNotFound }, "\(c)")
            #expect(c.tls?.sni == "tls.icy.test" && c.tls?.decrypted == false)
            #expect((c.tls?.applicationBytesFromServer ?? 0) > 0, "the records held were still counted")
        }
    }

    @Test func aGrowingKeyLogIsReadOnFromWhereItWasAndWholeLinesOnly() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-keylog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("keys").path
        let a = String(repeating: "a1", count: 32), b = String(repeating: "b2", count: 32)
        let secret = String(repeating: "c3", count: 48)
        // Live, a key log that does not exist yet is not an error: read once it is written.
        let later = dir.appendingPathComponent("later").path
        let waiting = try KeyLog(paths: [later], growing: true)
        #expect(throws: KeyLogError.self) { _ = try KeyLog(paths: [later]) }
        try "CLIENT_RANDOM \(b) \(secret)\n".write(toFile: later, atomically: false, encoding: .utf8)
        #expect(waiting.secrets(forClientRandom: TLSDecryptionTests.bytes(b), now: true)?.masterSecret != nil)
        // A line being written when the capture starts: not read until it is whole.
        try "# keys\nCLIENT_RANDOM \(a) \(secret.prefix(40))".write(toFile: path, atomically: false, encoding: .utf8)
        let log = try KeyLog(paths: [path], growing: true)
        #expect(log.secrets(forClientRandom: TLSDecryptionTests.bytes(a), now: true) == nil)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\(secret.dropFirst(40))\n".utf8))
        try handle.close()
        let found = log.secrets(forClientRandom: TLSDecryptionTests.bytes(a), now: true)
        #expect(found?.masterSecret == TLSDecryptionTests.bytes(secret))
        #expect(log.malformedLines == 0, "the half line was not taken for a line")
        // Replaced by a shorter file (a new session): read from its start.
        try "CLIENT_RANDOM \(b) \(secret)\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(log.secrets(forClientRandom: TLSDecryptionTests.bytes(b), now: true)?.masterSecret != nil)
        #expect(log.secrets(forClientRandom: TLSDecryptionTests.bytes(a))?.masterSecret != nil, "what was read stays")
    }
}

/// Each key log is read with its own state: a growing log that ends in the middle of an
/// overlong line (being skipped) does not make the next log's first line be skipped too.
@Suite struct KeyLogReadingStateTests {
    @Test func oneLogsUnfinishedLongLineDoesNotSkipTheNextLogsFirstLine() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-keylog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = dir.appendingPathComponent("a.keys"), second = dir.appendingPathComponent("b.keys")
        try Data(repeating: 0x61, count: KeyLog.maxLineBytes + 100).write(to: first)   // no line end yet
        let random = String(repeating: "ab", count: 32), secret = String(repeating: "cd", count: 48)
        try Data("CLIENT_RANDOM \(random) \(secret)\n".utf8).write(to: second)
        let log = try KeyLog(paths: [first.path, second.path], growing: true)
        #expect(log.count == 1, "the second log's only line was read")
        #expect(log.secrets(forClientRandom: Array(repeating: 0xAB, count: 32))?.masterSecret == Array(repeating: 0xCD, count: 48))
    }
}
