import Testing
@testable import IcySniffCore

/// Exchanges estimated from the records of a TLS connection without keys (`RecordPattern`), on
/// handshakes built byte by byte (TLSMetadataTests' builders) through the whole pipeline.
@Suite struct RecordPatternTests {
    typealias M = TLSMetadataTests

    /// A TLS 1.3 connection (TLS_AES_256_GCM_SHA384: 17 bytes of overhead a record) with
    /// `exchanges` request/response pairs after the handshake: a 100-byte request record, then
    /// a response in two records of 500 and 700; and, first, two tickets of 290 bytes.
    static func connection(exchanges: Int, alpn: [String] = ["h2", "http/1.1"], settings: Bool = false) -> [(Transcript.Side, [UInt8])] {
        let hello = M.clientHello(sni: "www.example.test", alpn: alpn, earlyData: false)
        let sh = M.serverHello(version: 0x0304, cipher: 0x1302,
                               extensions: M.ext(43, M.u16(0x0304)) + M.ext(51, M.u16(0x001D) + M.u16(32) + [UInt8](repeating: 1, count: 32)))
        func sealed(_ n: Int) -> [UInt8] { M.record(23, [UInt8](repeating: 0xEE, count: n)) }
        var blocks: [(Transcript.Side, [UInt8])] = [(.client, M.record(22, hello)), (.server, M.record(22, sh) + M.record(20, [1]) + sealed(900) + sealed(69)),
                                                   (.client, M.record(20, [1]) + sealed(69)), (.server, sealed(290) + sealed(290))]
        if settings { blocks.append((.server, sealed(17 + 24))) }
        for _ in 0..<exchanges {
            blocks.append((.client, sealed(100)))
            blocks.append((.server, sealed(500)))
            blocks.append((.server, sealed(700)))
        }
        blocks.append((.client, sealed(19)))   // close_notify
        return blocks
    }

    @Test func http11ExchangesToTheByte() throws {
        let sink = Transcript(blocks: Self.connection(exchanges: 3)).collect()
        let tls = try #require(sink.connections.first?.tls)
        let inferred = try #require(tls.inferred)
        #expect(inferred.protocolName == "http/1.1" && inferred.protocolInferred, "h2 offered, no HTTP/2 set-up seen")
        #expect(inferred.exchangeCount == 3 && inferred.exact)
        #expect(inferred.exchanges.map(\.requestBytes) == [83, 83, 83], "the tickets and the alert are no exchange")
        #expect(inferred.exchanges.map(\.responseBytes) == [1166, 1166, 1166])
        #expect(inferred.exchanges.allSatisfy { $0.responseStart != nil && $0.requestRecords == 1 && $0.responseRecords == 2 })
        #expect(sink.transactions.isEmpty)
    }

    @Test func http2IsToldByItsSettings() throws {
        let inferred = try #require(Transcript(blocks: Self.connection(exchanges: 2, settings: true)).collect().connections.first?.tls?.inferred)
        #expect(inferred.protocolName == "h2" && !inferred.exact)
        // The first client record is no preface here: the second one is the one request seen.
        #expect(inferred.exchangeCount == 1 && inferred.exchanges.count == 1, "\(inferred)")
        // Offered http/1.1 alone: HTTP/1.1, whatever the records.
        let h1 = try #require(Transcript(blocks: Self.connection(exchanges: 2, alpn: ["http/1.1"], settings: true)).collect().connections.first?.tls?.inferred)
        #expect(h1.protocolName == "http/1.1" && !h1.protocolInferred)
    }

    /// The exchanges a connection keeps are charged to the pipeline's state budget: past it the
    /// connection is ended, flagged state_budget_exceeded, with the exchanges it had.
    @Test func keptExchangesAreChargedToTheStateBudget() throws {
        var limits = ReassemblyLimits()
        limits.stateBudget = 20 * RecordPattern.bytesPerExchange
        let sink = Transcript(blocks: Self.connection(exchanges: 200)).collect(limits: limits)
        let first = try #require(sink.connections.first)
        #expect(first.weirds.contains { $0.0 == Weird.stateBudgetExceeded }, "\(first.weirds)")
        let kept = try #require(first.tls?.inferred?.exchanges.count)
        #expect(kept > 0 && kept <= 22, "\(kept) kept")
        let whole = try #require(Transcript(blocks: Self.connection(exchanges: 200)).collect().connections.first?.tls?.inferred)
        #expect(whole.exchangeCount == 200)
    }

    /// At most `maxExchanges` are kept per connection; the count goes on, no longer exact.
    @Test func aConnectionKeepsAtMostTenThousand() {
        var pattern = RecordPattern()
        var t: Int64 = 0
        for _ in 0..<(RecordPattern.maxExchanges + 5) {
            t += 1000
            pattern.record(fromClient: true, length: 80, first: Timestamp(nanoseconds: t), last: Timestamp(nanoseconds: t))
            pattern.record(fromClient: false, length: 300, first: Timestamp(nanoseconds: t + 10), last: Timestamp(nanoseconds: t + 10))
        }
        let result = pattern.result(offered: ["http/1.1"], negotiated: nil)
        #expect(result?.exchanges.count == RecordPattern.maxExchanges)
        #expect(result?.exchangeCount == RecordPattern.maxExchanges + 5 && result?.exact == false)
    }

    /// HTTP/2 without keys: a request at each client record that can carry HEADERS (the first
    /// one after the preface, SETTINGS and WINDOW_UPDATE), a row each. A request the client sent
    /// after the previous response came and before the next one is alone: its response is what
    /// the server sent in between, less a frame header a record and the HEADERS frame's. Requests
    /// sent in one burst share what follows: no response bytes, no times.
    @Test func http2RequestsAreRowsAndAloneOnesKeepTheirResponse() throws {
        var pattern = RecordPattern()
        pattern.overhead = 17
        var t: Int64 = 0
        func record(_ client: Bool, _ plaintext: Int) {
            t += 1_000_000
            pattern.record(fromClient: client, length: plaintext + 17, first: Timestamp(nanoseconds: t), last: Timestamp(nanoseconds: t))
        }
        let setUp = 24 + 9 + 6 * 8 + 13
        record(true, setUp + 9 + 50)      // preface, SETTINGS, WINDOW_UPDATE and a request
        record(false, 9)                  // SETTINGS acknowledgement: control, no response
        record(false, 500); record(false, 700)
        record(true, 13)                  // WINDOW_UPDATE: no request
        record(true, 9 + 40)              // the second request, alone too
        record(false, 300)
        for _ in 0..<3 { record(true, 9 + 30) }   // a burst of three
        record(true, 1400)                // a request body's DATA frame: no request
        record(false, 2000); record(false, 900)
        record(true, 1400)                // after the response: no part of a request
        let read = pattern.result(offered: ["h2", "http/1.1"], negotiated: nil)
        let result = try #require(read)
        #expect(result.protocolName == "h2" && result.protocolInferred)
        #expect(result.exchangeCount == 5 && !result.exact)
        let x = result.exchanges
        try #require(x.count == 5)
        #expect(x.map(\.requestBytes) == [50, 40, 30, 30, 30 + 1391], "the body's record continues the last request")
        #expect(x.map(\.alone) == [true, true, false, false, false])
        #expect(x.map(\.responseBytes) == [491 + 691 - 9, 291 - 9, nil, nil, nil])
        #expect(x[0].responseStart != nil && x[2].responseStart == nil && x[4].responseEnd == nil)
    }

    /// HTTP/3 without keys (`QUICPacketPattern`): a client packet larger than an acknowledgement
    /// is a request, a run of full packets its body (or the body of the request before while no
    /// response came), the shorter one after the body's last; server packets are response data.
    @Test func http3RequestsAreReadFromPacketSizes() throws {
        var pattern = QUICPacketPattern()
        var t: Int64 = 0
        func packet(_ client: Bool, _ frameBytes: Int) {
            t += 1_000_000
            pattern.packet(fromClient: client, frameBytes: frameBytes, at: Timestamp(nanoseconds: t), keep: true)
        }
        packet(true, 60)                              // a request
        packet(false, 10)                             // an acknowledgement: no response data
        packet(false, 1100); packet(false, 1100); packet(false, 300)
        packet(true, 9)                               // the client's acknowledgement
        packet(true, 50)                              // a POST's HEADERS
        for _ in 0..<3 { packet(true, 1150) }         // its body
        packet(true, 400)                             // the body's last packet
        packet(false, 40)
        packet(true, 40); packet(true, 45)            // two requests in a burst
        packet(false, 1100)
        packet(true, 1150)                            // a PUT sent whole: HEADERS and body start
        packet(true, 1150)                            // (no response seen: not alone)
        var series = pattern.series
        let x = series.result()
        #expect(series.count == 5 && x.count == 5)
        #expect(x.map(\.requestBytes) == [52, 42 + 3 * 1142 + 392, 32, 37, 1142 + 1142])
        #expect(x.map(\.alone) == [true, true, false, false, false])
        #expect(x.map(\.responseBytes) == [1092 + 1092 + 292 - 6, 32 - 6, nil, nil, nil])
        // Chrome's shape (FoxIO's chrome-cloudflare-quic capture): its control streams' set-up in a
        // first packet of 44 frame bytes, the request in the next (441), and at the end, after the
        // response, an unanswered 25-byte packet, its closing: one request.
        var chrome = QUICPacketPattern()
        for (client, bytes) in [(true, 44), (true, 441), (false, 1160), (false, 1160), (true, 8), (false, 840), (true, 25)] {
            t += 1_000_000
            chrome.packet(fromClient: client, frameBytes: bytes, at: Timestamp(nanoseconds: t), keep: true)
        }
        let workspace = QUICConnectionSession.PacketWorkspace()
        var decrypted = chrome, offersH2 = chrome
        let whenDecrypted = decrypted.finish(alpnOffered: ["h3"], decrypted: true, in: workspace)
        let whenH2Offered = offersH2.finish(alpnOffered: ["h3", "h2"], decrypted: false, in: workspace)
        #expect(whenDecrypted == nil && whenH2Offered == nil)
        let finished = chrome.finish(alpnOffered: ["h3"], decrypted: false, in: workspace)
        let inferred = try #require(finished)
        let one = inferred.exchanges
        #expect(one.count == 1 && one.first?.requestBytes == 433 && one.first?.responseBytes == 1152 + 1152 + 832 - 6, "\(one)")
        #expect(inferred.protocolName == "h3" && inferred.exchangeCount == 1 && !inferred.exact)
        // A datagram's position: a packet behind an Initial (padding to 1,200 bytes) is not a
        // request, nor a server's behind its long-header packets; the next datagram's are.
        var placed = QUICPacketPattern()
        placed.datagramStarts()
        placed.sawLongHeader()
        placed.sawInitial()
        _ = placed.shortPacket(frameBytes: 1150, at: Timestamp(nanoseconds: 1), from: .fromClient, in: workspace)
        #expect(placed.series.count == 0)
        placed.datagramStarts()
        placed.sawLongHeader()
        _ = placed.shortPacket(frameBytes: 60, at: Timestamp(nanoseconds: 2), from: .fromClient, in: workspace)
        _ = placed.shortPacket(frameBytes: 400, at: Timestamp(nanoseconds: 3), from: .fromServer, in: workspace)
        #expect(placed.series.count == 1 && placed.series.exchanges.first?.responseBytes == nil)
        placed.datagramStarts()
        _ = placed.shortPacket(frameBytes: 400, at: Timestamp(nanoseconds: 4), from: .fromServer, in: workspace)
        #expect(placed.series.exchanges.first?.responseBytes != nil)
        // The run's room for kept estimates spent: counted, not kept.
        var full = QUICPacketPattern()
        full.packet(fromClient: true, frameBytes: 60, at: Timestamp(nanoseconds: 1), keep: false)
        #expect(full.series.count == 1 && full.series.exchanges.isEmpty)
    }
}
