/// `--connections`: one line per connection, TCP or QUIC.
public final class ConnectionListWriter: OutputSink {
    private var summaries: [ConnectionSummary] = []
    private let output: OutputFile
    private let format: OutputFormat

    public init(output: OutputFile, format: OutputFormat) {
        self.output = output
        // -V shows transactions' heads; connections have none: the table it is.
        self.format = format == .heads ? .table : format
    }

    public func consume(_ transaction: Transaction) {}

    public func connectionFinished(_ connection: Connection) {
        summaries.append(ConnectionSummary(connection))
    }

    public func finish(comment: String?) throws(OutputError) {
        summaries.sort { $0.id < $1.id }
        let columns = ["id", "transport", "start", "client", "server", "handshake_ms", "bytes_from_client", "bytes_from_server", "packets", "gaps", "missed_bytes", "history", "anomalies",
                       "tls_version", "sni", "alpn", "cipher", "tls_handshake_ms", "resumed", "seen"]
        switch format {
        case .ndjson, .har:
            for s in summaries {
                let w = JSONWriter(indent: 0)
                w.beginObject()
                w.string("id", "C\(s.id)")
                w.string("transport", s.transport.rawValue)
                w.string("start", s.start.iso8601(fractionDigits: 6))
                w.string("client", s.client.description)
                w.string("server", s.server.description)
                w.optionalNumber("handshake_ms", s.handshakeMilliseconds)
                w.int("bytes_from_client", s.bytesFromClient)
                w.int("bytes_from_server", s.bytesFromServer)
                w.int("packets", s.packets)
                w.int("gaps", s.gaps)
                w.int("missed_bytes", s.gapBytes)
                w.string("history", s.history)
                w.key("anomalies"); w.beginArray(); for (k, _) in s.weirds { w.string(k.rawValue) }; w.endArray()
                if let tls = s.tls { ConnectionSummary.write(tls, to: w) }
                if let q = s.quic { ConnectionSummary.write(q, tls: s.tls, to: w) }
                if let n = s.notHTTP { ConnectionSummary.write(n, to: w) }
                if let tunnel = s.tunnel { ConnectionSummary.write(tunnel, to: w) }
                w.endObject()
                w.append(0x0A)
                output.write(w.buffer)
            }
        case .tsv, .csv, .table, .heads:
            let sep = format == .csv ? "," : (format == .tsv ? "\t" : "  ")
            // A missing value is an empty cell in TSV/CSV (analytics tools then type a column of
            // numbers as numbers), "-" in the terminal table.
            let missing = format == .table ? "-" : ""
            // Text from the wire (SNI, ALPN) and lists: escaped as the transactions' TSV/CSV
            // escape them; in the table, control characters are shown as "?" (as the transactions'
            // table shows them), so a client cannot drive the terminal with its server name.
            func text(_ t: String) -> String {
                format == .table ? TableWriter.printable(t) : TableWriter.escaped(t, tsv: format == .tsv)
            }
            var rows = [columns]
            for s in summaries {
                rows.append([
                    "C\(s.id)", s.transport.rawValue, s.start.iso8601(fractionDigits: 6), s.client.description, s.server.description,
                    s.handshakeMilliseconds.map { String(format3: $0) } ?? missing,
                    String(s.bytesFromClient), String(s.bytesFromServer), String(s.packets), String(s.gaps),
                    String(s.gapBytes), s.history.isEmpty ? missing : s.history,
                    s.weirds.isEmpty ? missing : text(s.weirds.map { $0.0.rawValue }.joined(separator: ",")),
                    s.quic.map { QUICVersion.name($0.version) } ?? s.tls?.versionName ?? missing, s.tls?.sni.map(text) ?? missing, s.tls?.alpn.map(text) ?? missing,
                    s.tls?.cipherName.map(text) ?? missing,
                    s.tls?.handshakeMilliseconds.map { String(format3: $0) } ?? missing,
                    s.tls.map { $0.resumed ? ($0.resumption ?? "yes") : "no" } ?? missing,
                    text(s.seenText ?? missing),
                ])
            }
            if format == .table {
                var widths = [Int](repeating: 0, count: columns.count)
                for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
                for r in rows {
                    var line = ""
                    for (i, c) in r.enumerated() {
                        line += c + (i == r.count - 1 ? "" : String(repeating: " ", count: widths[i] - c.count) + sep)
                    }
                    output.write(line + "\n")
                }
            } else {
                for r in rows { output.write(r.joined(separator: sep) + "\n") }
            }
        }
    }
}

extension String {
    public init(format3 value: Double) {
        let w = JSONWriter()
        w.number(value)
        self = w.text
    }
}
