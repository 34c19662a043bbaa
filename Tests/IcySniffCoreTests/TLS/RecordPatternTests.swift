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
        #expect(inferred.protocolName == "h2" && inferred.exchanges.isEmpty && !inferred.exact)
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
}
