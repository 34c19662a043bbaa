import Foundation
import Testing
import CZlib
@testable import IcySniffCore

/// The reassembled byte streams of real captures are byte-identical to what tcpflow reassembles.
/// tcpflow's results are golden data (Tests/Golden/tcpflow-streams.json, made by
/// scripts/make-tcpflow-golden): length and CRC-32 of every connection direction, with gaps as
/// zero bytes (tcpflow leaves holes in its files).
@Suite struct TCPFlowGoldenTests {
    struct Golden: Decodable {
        struct Stream: Decodable { var length: Int; var crc32: UInt32 }
        var tool: String
        var captures: [String: [String: Stream]]
    }

    static let golden: Golden = {
        let url = Paths.golden.appendingPathComponent("tcpflow-streams.json")
        let data = try! Data(contentsOf: url)
        return try! JSONDecoder().decode(Golden.self, from: data)
    }()

    static let captureNames: [String] = golden.captures.keys.sorted()

    /// tcpflow's file name for a direction: zero-padded IPv4 and ports.
    static func name(_ e: Endpoint) -> String {
        let port = String(format: "%05d", Int(e.port))
        if e.address.isIPv4 {
            let parts = e.address.description.split(separator: ".").map { String(format: "%03d", Int($0)!) }
            return parts.joined(separator: ".") + "." + port
        }
        return e.address.description + "." + port
    }

    static func reassemble(_ relative: String) throws -> [String: (Int, UInt32)] {
        let path = Paths.packageRoot.appendingPathComponent(relative).standardized.path
        let source = try PcapSource.open(path: path)
        var decoder = PacketDecoder(linkType: source.linkType)
        var handlers: [(Connection, RecordingHandler)] = []
        let table = ConnectionTable<RecordingHandler> { c in
            let h = RecordingHandler()
            handlers.append((c, h))
            return h
        }
        loop: while true {
            switch source.next() {
            case .packet(let p):
                if case .tcp(let segment) = decoder.decode(p) { table.ingest(segment) }
            case .timeout: continue
            case .end, .failed: break loop
            }
        }
        table.flushAll(at: Timestamp(nanoseconds: Int64.max / 2))
        var result: [String: (Int, UInt32)] = [:]
        for (c, h) in handlers {
            for d in Direction.allCases where !h.data[d].isEmpty {
                let key = name(c.source(of: d)) + "-" + name(c.source(of: d.reversed))
                let crc = h.data[d].withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) }
                result[key] = (h.data[d].count, UInt32(crc))
            }
        }
        return result
    }

    @Test func coversAtLeastFifteenCaptures() {
        #expect(Self.captureNames.count >= 15)
    }

    @Test(arguments: captureNames)
    func streamsMatchTcpflow(_ capture: String) throws {
        let expected = try #require(Self.golden.captures[capture])
        let ours = try Self.reassemble(capture)
        for (rawName, stream) in expected {
            // tcpflow appends "--VLAN" to flows seen with a VLAN tag.
            let name = rawName.components(separatedBy: "--").first!
            let got = try #require(ours[name], "\(capture): no stream \(name)")
            #expect(got.0 == stream.length, "\(capture) \(name): length")
            #expect(got.1 == stream.crc32, "\(capture) \(name): bytes")
        }
        #expect(ours.count == expected.count, "\(capture): same number of streams")
    }
}
