import Testing
@testable import IcySniffCore

/// The cap on state a peer can make icy-sniff hold (issue 31): at most 1,000 HTTP/2 streams
/// waiting for their responses at once, and 1,000 pipelined HTTP/1.x requests. Past it the
/// oldest waiting request is written early, flagged `waiting_requests_capped`, and a response
/// that comes for it later is written on its own, flagged too — nothing is dropped silently.
@Suite struct OpenStreamCapTests {
    @Test func http2StreamsPastTheCapAreWrittenEarlyAndTheirResponsesStillCount() {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let n = StreamPairing.maxOpen + 100
        var client = HTTP2FrameHeader.preface + H2.settings()
        for i in 0..<n {
            client += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: UInt32(2 * i + 1), c.encode([
                (":method", "GET"), (":scheme", "http"), (":authority", "h.example"), (":path", "/s/\(i)")]))
        }
        // The server answers the first stream (written early by then) and the last.
        var server = H2.settings() + H2.settings(ack: true)
        for stream in [1, 2 * (n - 1) + 1] {
            server += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: UInt32(stream), s.encode([(":status", "204")]))
        }
        let ts = Transcript(blocks: [(.client, client), (.server, server)]).run()
        #expect(ts.count == n + 1, "every request, and the late response on its own")
        let early = ts.filter { $0.weirds.contains(.waitingRequestsCapped) && $0.request != nil }
        // 100 streams past the cap, and one more when the late response opened its own.
        #expect(early.count == 101)
        #expect(early.first?.request?.targetString == "/s/0" && early.allSatisfy { $0.response == nil })
        let late = ts.filter { $0.request == nil }
        #expect(late.count == 1 && late.first?.streamID == 1 && late.first?.response?.status == 204)
        #expect(late.first?.weirds.contains(.waitingRequestsCapped) == true && late.first?.weirds.contains(.requestMissing) == true)
        let last = ts.first { $0.streamID == UInt64(2 * (n - 1) + 1) && $0.request != nil }
        #expect(last?.response?.status == 204 && last?.weirds.contains(.waitingRequestsCapped) == false)
    }

    @Test func pipelinedRequestsPastTheCapAreWrittenEarlyAndTheirResponsesInOrder() {
        let n = InOrderPairing.maxWaiting + 5
        var requests = ""
        for i in 0..<n { requests += "GET /r/\(i) HTTP/1.1\r\nHost: h.example\r\n\r\n" }
        var responses = ""
        for i in 0..<n { responses += "HTTP/1.1 200 OK\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)" }
        let ts = Transcript(blocks: [(.client, Array(requests.utf8)), (.server, Array(responses.utf8))]).run()
        #expect(ts.count == n + 5)
        let early = ts.filter { $0.request != nil && $0.response == nil }
        #expect(early.map { $0.request!.targetString } == (0..<5).map { "/r/\($0)" })
        #expect(early.allSatisfy { $0.weirds.contains(.waitingRequestsCapped) })
        let alone = ts.filter { $0.request == nil }
        #expect(alone.count == 5 && alone.allSatisfy { $0.weirds.contains(.waitingRequestsCapped) && $0.response?.status == 200 })
        #expect(alone.map(\.depth) == early.map(\.depth), "each response alone takes its request's place")
        let paired = ts.filter { $0.request != nil && $0.response != nil }
        #expect(paired.count == n - 5 && paired.first?.request?.targetString == "/r/5" && paired.first?.response?.body.bytes == 1)
    }
}

/// HTTP/3 remembers which request streams it emitted (QUIC delivers streams in any order among
/// themselves, so a straggler must be told from a new stream) without one entry per stream of a
/// long connection: a watermark below which all were emitted, and the few emitted above it.
@Suite struct HTTP3ClosedStreamTests {
    @Test func closedStreamsAreRememberedOutOfOrderAndBounded() {
        let sink = CollectingSink()
        let emitter = TransactionEmitter(sink: sink, dns: DNSTracker())
        let c = Connection(id: 1, first: Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: 50000),
                           second: Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 443), timestamp: Timestamp(nanoseconds: 0))
        let pairing = StreamPairing(connection: c, emitter: emitter, scheme: "https", numbering: .http3)
        // 10,000 request streams, closed in a shuffled order within windows of 64.
        var ids = (0..<10_000).map { UInt64($0) * 4 }
        var rng = SystemRandomNumberGenerator()
        for w in stride(from: 0, to: ids.count, by: 64) { ids[w..<min(w + 64, ids.count)].shuffle(using: &rng) }
        for id in ids {
            pairing.open(id, request: nil)
            pairing.reset(id, at: Timestamp(nanoseconds: 1), as: .http3StreamReset)
        }
        #expect(sink.transactions.count == 10_000)
        #expect(ids.allSatisfy { pairing.wasClosed($0) })
        #expect(!pairing.wasClosed(40_000) && !pairing.wasClosed(40_004), "streams not yet opened are not closed")
        #expect(pairing.closedAboveWatermark == 0, "all below the watermark: nothing kept per stream")
    }
}

/// The shared budget of waiting requests (issue 31) is given back whole: after every kind of
/// connection ends — pipelined HTTP/1.x, h2c, h2c after an Upgrade, a CONNECT tunnel, requests
/// never answered — nothing stays charged (a leak would make every later segment end
/// connections to make room that never comes).
@Suite struct StateBudgetTests {
    @Test func nothingStaysChargedWhenConnectionsEnd() throws {
        for capture in ["nginx-cache-demo.pcap.gz", "h2c-sample.pcap", "wikipedia.pcap", "tunnel-sample.pcap"] {
            let sink = CollectingSink()
            let pipeline = Pipeline(sink: sink)
            let source = try PcapSource.open(path: Paths.captures.appendingPathComponent(capture).path)
            _ = pipeline.run(source)
            pipeline.finish()
            #expect(!sink.transactions.isEmpty, "\(capture)")
            #expect(pipeline.budgetUsed == 0, "\(capture): \(pipeline.budgetUsed) bytes still charged")
        }
    }
}
