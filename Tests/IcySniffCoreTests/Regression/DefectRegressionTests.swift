import Foundation
import Testing
import CZlib
@testable import IcySniffCore

/// One test per defect of the seams issue (#14) that a small generated input reproduces; each
/// failed before its fix.
@Suite struct DefectRegressionTests {
    /// Every split of the same bytes gives the same transactions.
    func allSplitsAgree(_ transcript: Transcript, maxSegment: Int = 24) -> [String] {
        let whole = transcript.run().map(summary)
        for size in 1...maxSegment {
            #expect(transcript.run(segmentSize: size).map(summary) == whole, "segments of \(size) bytes")
        }
        return whole
    }

    /// Defect 3: `GET /path` without a version followed by header lines is one HTTP/1.x request
    /// (bad_request_line, header kept) whether the lines come in one segment or several; it was
    /// HTTP/0.9 with the header dropped when split after the first line.
    @Test func versionlessRequestLineWithHeadersIsTheSameAtEverySplit() {
        let t = Transcript("""
        >>>
        GET /path
        Host: x

        <<<
        HTTP/1.1 200 OK
        Content-Length: 2

        ok\\
        """)
        let whole = allSplitsAgree(t)
        #expect(whole == ["GET /path  body=0 -> 200 body=2/2 [bad_request_line]"])
        let first = try? #require(t.run(segmentSize: 11).first)
        #expect(first?.request?.headers.first(.host) == "x", "the header line is kept")
    }

    /// Defect 3, the other side: a real HTTP/0.9 request (one line, then the server answers
    /// without a status line) is HTTP/0.9 at every split too.
    @Test func http09RequestIsHTTP09AtEverySplit() {
        let t = Transcript("""
        >>>
        GET /old
        <<<
        <html>hello</html>\\
        """)
        let whole = allSplitsAgree(t)
        #expect(whole == ["GET /old HTTP/0.9 body=0 -> 0 body=18/18 [http_0_9]"], "\(whole)")
    }

    /// Defect 4: a chunk-size line with junk after its digits is named (it was taken as 5).
    @Test func chunkSizeWithJunkIsNamed() {
        let t = Transcript("""
        >>>
        GET / HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Transfer-Encoding: chunked

        5zz
        hello
        0


        """)
        let whole = allSplitsAgree(t)
        #expect(whole == ["GET / HTTP/1.1 body=0 -> 200 body=5/5 [bad_chunk_size,request_smuggling_suspected]"], "\(whole)")
        // Extensions and whitespace before them are not junk.
        let ok = Transcript("""
        >>>
        GET / HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Transfer-Encoding: chunked

        5 ;name=value
        hello
        0


        """)
        #expect(ok.run().map(summary) == ["GET / HTTP/1.1 body=0 -> 200 body=5/5 []"])
    }

    static func gzip(_ data: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        deflateInit2_(&stream, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        var out = [UInt8](repeating: 0, count: data.count + 1024)
        var input = data
        input.withUnsafeMutableBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                stream.next_in = inp.baseAddress
                stream.avail_in = UInt32(inp.count)
                stream.next_out = o.baseAddress
                stream.avail_out = UInt32(o.count)
                deflate(&stream, Z_FINISH)
            }
        }
        let n = Int(stream.total_out)
        deflateEnd(&stream)
        return Array(out[0..<n])
    }

    /// Defect 2: a gzip body whose Content-Length ends it before its compressed stream ends is
    /// flagged; it was reported as decoded cleanly (4,800 bytes compressed to 59; 39 sent).
    @Test func gzipBodyCutShortButCompleteByLengthIsFlagged() throws {
        let plain = [UInt8](repeating: UInt8(ascii: "a"), count: 4800)
        let compressed = Self.gzip(plain)
        #expect(compressed.count > 39)
        let sent = Array(compressed.prefix(39))
        func run(_ body: [UInt8]) -> Transaction? {
            let head = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
            let t = Transcript(blocks: [(.client, Array("GET /z HTTP/1.1\r\nHost: x\r\n\r\n".utf8)), (.server, head + body)])
            return t.run().first
        }
        let cut = try #require(run(sent))
        #expect(cut.allWeirds.contains(.bodyDecodeIncomplete), "\(cut.allWeirds)")
        #expect(cut.response?.complete == true, "the framing says the body is whole")
        #expect((cut.response?.body.decodedBytes ?? 0) <= 4800, "what was decoded, no more")
        // The whole stream decodes cleanly, unflagged.
        let whole = try #require(run(compressed))
        #expect(whole.allWeirds.isEmpty, "\(whole.allWeirds)")
        #expect(whole.response?.body.decodedBytes == 4800)
    }

    /// Defect 6: every catalogued anomaly name has a place in the code that raises it (the four
    /// that had none: fragment_reassembly_timeout, unknown_link_payload, bad_status_line,
    /// garbage_before_message).
    @Test func everyCataloguedAnomalyIsRaisedSomewhere() throws {
        let root = Paths.packageRoot.appendingPathComponent("Sources/IcySniffCore")
        var text = ""
        let walker = try #require(FileManager.default.enumerator(atPath: root.path))
        while let p = walker.nextObject() as? String {
            guard p.hasSuffix(".swift") else { continue }
            if p.hasSuffix("Weird.swift") || p.hasSuffix("AnomalyCatalogue.swift") { continue }
            text += try String(contentsOf: root.appendingPathComponent(p), encoding: .utf8)
        }
        for weird in Weird.allCases {
            let name = "\(weird)"
            #expect(text.contains(".\(name))") || text.contains(".\(name),") || text.contains(".\(name) ")
                    || text.contains(".\(name)\n") || text.contains(".\(name):"), "nothing raises \(weird.rawValue)")
        }
    }

    /// Defect 6, raised for real: a status line that is not one, and junk between two messages.
    @Test func badStatusLineAndGarbageBetweenMessagesAreNamed() {
        let t = Transcript("""
        >>>
        GET /a HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 2OO OK
        HTTP/1.1 200 OK
        Content-Length: 0

        >>>
        GET /b HTTP/1.1
        Host: x

        <<<
        junk that is no response
        HTTP/1.1 204 No Content


        """)
        let sink = t.collect()
        let whole = sink.transactions
        #expect(whole.count == 2)
        #expect(whole.first?.response?.status == 200)
        #expect(whole.last?.allWeirds.contains(.garbageSkipped) == true, "\(whole.map(summary))")
        // The line that meant to be a status line is named on the connection.
        #expect(sink.connections.first?.weirds.contains { $0.0 == .badStatusLine } == true)
    }

    /// Defect 6: fragments that never complete are counted when they time out or the capture ends.
    @Test func incompleteFragmentsAreCounted() throws {
        var pcap = PcapBuilder()
        // The first fragment of a UDP datagram whose rest never comes.
        var ip: [UInt8] = [0x45, 0, 0, 0, 0x12, 0x34, 0x20, 0x00, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]
        let payload = [UInt8](repeating: 0x41, count: 64)
        let total = ip.count + payload.count
        ip[2] = UInt8(total >> 8); ip[3] = UInt8(total & 0xFF)
        pcap.ethernet(etherType: 0x0800, ip + payload, at: 1)
        // An EtherType nobody knows, and one ARP frame (not an anomaly).
        pcap.ethernet(etherType: 0x88B5, [UInt8](repeating: 0, count: 46), at: 2)
        pcap.ethernet(etherType: 0x0806, [UInt8](repeating: 0, count: 28), at: 3)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("frag-\(UUID().uuidString).pcap")
        try pcap.data.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let (_, _, stats) = try analyse(url.path)
        #expect(stats.weirds[.fragmentTimeout] == 1)
        #expect(stats.weirds[.unknownLinkPayload] == 1)
        #expect(stats.skippedPackets == 3)
    }
}

/// A classic pcap (Ethernet) written in memory.
struct PcapBuilder {
    var data = Data([0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 1, 0, 0, 0])

    mutating func ethernet(etherType: UInt16, _ payload: [UInt8], at seconds: UInt32) {
        let frame = [UInt8](repeating: 2, count: 12) + [UInt8(etherType >> 8), UInt8(etherType & 0xFF)] + payload
        var header = [UInt8]()
        for v in [seconds, 0, UInt32(frame.count), UInt32(frame.count)] {
            header += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
        }
        data.append(contentsOf: header + frame)
    }
}
