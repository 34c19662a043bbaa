import Testing
@testable import IcySniffCore

/// `--connections` (issue 30): live, each connection is written when it ends, not at Ctrl-C;
/// the terminal table fits the terminal's width (80 columns and up) and keeps its columns
/// aligned whatever the values; TSV keeps every field.
@Suite struct ConnectionListTests {
    static func connection(_ id: UInt64, sni: String? = nil, port: UInt16 = 50000) -> Connection {
        let client = Endpoint(address: IPAddress(ipv4: 0xC0A8_2B65), port: port)
        let server = Endpoint(address: IPAddress(ipv4: 0x5DB8_D822), port: 443)
        let c = Connection(id: id, first: client, second: server, timestamp: Timestamp(nanoseconds: 1_700_000_000_000_000_000))
        if let sni {
            var tls = TLSInfo()
            tls.sni = sni
            tls.version = 0x0304
            tls.alpn = "h2"
            c.tls = tls
        }
        return c
    }

    @Test func liveWritesEachConnectionAsItEnds() {
        for format in [OutputFormat.ndjson, .tsv, .table] {
            let out = OutputFile(memory: true)
            let writer = ConnectionListWriter(output: out, format: format, width: 80)
            writer.streaming = true
            writer.connectionFinished(Self.connection(7, sni: "api.example.com"))
            let first = String(decoding: out.takeBytes(), as: UTF8.self)
            #expect(first.contains("C7") && first.contains("api.example.com"), "\(format): \(first)")
            writer.connectionFinished(Self.connection(3))
            #expect(String(decoding: out.takeBytes(), as: UTF8.self).contains("C3"), "\(format)")
            try? writer.finish(comment: nil)
            #expect(out.takeBytes().isEmpty, "\(format): nothing is written twice")
        }
    }

    @Test func filesListConnectionsInOrderAtTheEnd() throws {
        let out = OutputFile(memory: true)
        let writer = ConnectionListWriter(output: out, format: .tsv)
        writer.connectionFinished(Self.connection(9))
        writer.connectionFinished(Self.connection(2))
        #expect(out.takeBytes().isEmpty)
        try writer.finish(comment: nil)
        let lines = String(decoding: out.takeBytes(), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 3 && lines[1].hasPrefix("C2\t") && lines[2].hasPrefix("C9\t"))
        #expect(lines[0].split(separator: "\t").count == ConnectionListWriter.columns.count)
    }

    @Test func tableFitsTheTerminal() throws {
        for width in [80, 100, 132, 200] {
            let out = OutputFile(memory: true)
            let writer = ConnectionListWriter(output: out, format: .table, width: width)
            writer.connectionFinished(Self.connection(1, sni: "a-very-long-server-name.cdn.example-content-delivery.net", port: 65535))
            writer.connectionFinished(Self.connection(123456, sni: "x.io"))
            writer.connectionFinished(Self.connection(3))
            try writer.finish(comment: nil)
            let lines = String(decoding: out.takeBytes(), as: UTF8.self).split(separator: "\n")
            #expect(lines.count == 4)
            for line in lines { #expect(TableWriter.cells(String(line)) <= width, "\(width): \(line)") }
            // Aligned: the UP column ends at the same cell on every line.
            let ends = lines.map { line in line.range(of: "UP").map { line.distance(from: line.startIndex, to: $0.upperBound) } }
            #expect(ends[0] != nil)
            #expect(lines.allSatisfy { TableWriter.cells(String($0)) >= (ends[0] ?? 0) })
            #expect(lines[1].contains("…") || width >= 132, "a long name is cut to fit: \(lines[1])")
            #expect(lines[1].contains("tls1.3 h2"))
        }
        #expect(ConnectionListWriter.size(999) == "999" && ConnectionListWriter.size(12_345) == "12.3k" && ConnectionListWriter.size(4_500_000_000) == "4.5G")
    }
}
