/// `--connections`: one line per connection, TCP or QUIC.
///
/// Files: the lines in connection order at the end; each line is rendered when its connection
/// ends and kept as bytes (spilled to a temporary file past 4 MiB), so a capture of 100,000
/// connections does not hold 100,000 summaries (161 MiB before). Live (`streaming`): each line
/// as its connection ends, flushed, so a phone's HTTPS shows up while it happens. The terminal table is
/// a narrower set of columns than TSV/CSV/NDJSON (which keep every field), laid out once for the
/// terminal's width (80 columns and up) so that a line never wraps and lines can be written one
/// by one.
public final class ConnectionListWriter: OutputSink {
    /// Files: the rendered lines, and where each connection's is (24 bytes per connection,
    /// sorted with bounded memory).
    private let store = SpillStore()
    private struct Line { var id: UInt64; var offset: Int; var length: Int }
    private let lines = ExternalSort<Line>(memoryLimit: 1 << 20) { $0.id < $1.id }
    private let output: OutputFile
    private let format: OutputFormat
    /// Write each connection as it ends (live captures), not all of them at the end.
    public var streaming = false
    private var wroteHeader = false
    private var wroteLines = false
    private let layout: [(column: TableColumn, width: Int)]

    public static let columns = ["id", "transport", "start", "client", "server", "handshake_ms", "bytes_from_client", "bytes_from_server", "packets", "gaps", "missed_bytes", "history", "anomalies",
                                 "tls_version", "sni", "alpn", "cipher", "tls_handshake_ms", "resumed", "seen", "ja4", "ech", "duration_ms"]
    /// `--fields` for TSV and CSV: the columns written, in this order (positions in `columns`).
    public var fields: [Int]? = nil

    /// The terminal table's columns.
    enum TableColumn: String, CaseIterable {
        case id = "ID", time = "TIME", client = "CLIENT", server = "SERVER", proto = "PROTO", up = "UP", down = "DOWN", handshake = "HS_MS", note = "NOTE"
        var rightAligned: Bool { self == .up || self == .down || self == .handshake }
    }

    /// `width`: the terminal table's width in cells (nil: the terminal's, `COLUMNS`, or 160).
    public init(output: OutputFile, format: OutputFormat, width: Int? = nil) {
        self.output = output
        // -V shows transactions' heads; connections have none: the table it is.
        self.format = format == .heads ? .table : format
        layout = Self.tableLayout(width: width ?? TableWriter.tableWidth(terminal: output.isTerminal))
    }

    /// The table's columns and widths for a line of `width` cells: the server (its name, else its
    /// address) and the note share what the others leave; until the server has 24 cells the note
    /// goes, the time drops its milliseconds, the handshake time goes and the client narrows.
    static func tableLayout(width: Int) -> [(column: TableColumn, width: Int)] {
        var widths: [(TableColumn, Int?)] = [(.id, 6), (.time, 12), (.client, 21), (.server, nil), (.proto, 9), (.up, 6), (.down, 6), (.handshake, 6), (.note, nil)]
        let steps: [(TableColumn, Int?)] = [(.note, nil), (.time, 8), (.handshake, nil), (.client, 15)]
        for (column, narrowed) in steps where (TableWriter.sharedWidth(widths.map(\.1), of: width) ?? .max) < 24 {
            guard let i = widths.firstIndex(where: { $0.0 == column }) else { continue }
            if let narrowed { widths[i].1 = narrowed } else { widths.remove(at: i) }
        }
        let share = max(8, TableWriter.sharedWidth(widths.map(\.1), of: width) ?? 0)
        return widths.map { ($0.0, $0.1 ?? share) }
    }

    public func consume(_ transaction: Transaction) {}

    public func connectionFinished(_ connection: Connection) {
        let summary = ConnectionSummary(connection)
        if streaming {
            if !wroteHeader { writeHeader() }
            output.write(render(summary))
            output.flush()
        } else {
            let bytes = Array(render(summary).utf8)
            let offset = bytes.withUnsafeBufferPointer { store.append($0) }
            lines.append(Line(id: summary.id, offset: offset, length: bytes.count))
        }
    }

    public func finish(comment: String?) throws(OutputError) {
        if !wroteHeader { writeHeader() }
        // The lines are written once.
        guard !wroteLines else { return }
        wroteLines = true
        let expected = lines.count
        var failed = false
        let given = lines.inOrder { line in
            if failed { return }
            failed = !store.withBytes(offset: line.offset, length: line.length) { output.write($0) }
        }
        if failed || given < expected {
            let reason = store.readFailure ?? lines.readFailure ?? "unknown error"
            throw OutputError(message: "--connections: a line could not be read back from its temporary file: \(reason)")
        }
    }

    private func writeHeader() {
        wroteHeader = true
        switch format {
        case .ndjson, .har, .websocket: break
        case .table:
            output.write(tableLine(layout.map { ($0.column, $0.column.rawValue) }) + "\n")
        case .tsv, .csv, .heads:
            output.write((fields?.map { Self.columns[$0] } ?? Self.columns).joined(separator: format == .csv ? "," : "\t") + "\n")
        }
    }

    /// One connection's line, with its newline.
    private func render(_ s: ConnectionSummary) -> String {
        switch format {
        case .ndjson, .har, .websocket:
            let w = JSONWriter(indent: 0)
            w.beginObject()
            w.string("id", s.label)
            w.string("transport", s.transport.rawValue)
            w.string("start", s.start.iso8601(fractionDigits: 6))
            w.string("client", s.client.description)
            if s.deviceMAC != 0 { w.string("device", MACAddress(raw: s.deviceMAC).description) }
            w.string("server", s.server.description)
            w.optionalNumber("handshake_ms", s.handshakeMilliseconds)
            w.number("duration_ms", s.durationMilliseconds)
            w.int("bytes_from_client", s.bytesFromClient)
            w.int("bytes_from_server", s.bytesFromServer)
            w.int("packets", s.packets)
            w.int("gaps", s.gaps)
            w.int("missed_bytes", s.gapBytes)
            w.string("history", s.history)
            w.key("anomalies"); w.beginArray(); for (k, _) in s.weirds { w.string(k.rawValue) }; w.endArray()
            if let tls = s.tls { ConnectionSummary.write(tls, to: w) }
            if let q = s.quic { ConnectionSummary.write(q, tls: s.tls, to: w) }
            if let inferred = s.tls?.inferred { ConnectionSummary.write(inferred, to: w) }
            if let n = s.notHTTP { ConnectionSummary.write(n, to: w) }
            if let tunnel = s.tunnel { ConnectionSummary.write(tunnel, to: w) }
            w.endObject()
            w.append(0x0A)
            return w.text
        case .table:
            return tableLine(layout.map { ($0.column, tableCell($0.column, s)) }) + "\n"
        case .tsv, .csv, .heads:
            // A missing value is an empty cell (analytics tools then type a column of numbers as
            // numbers); text from the wire (SNI, ALPN) and lists escaped as the transactions'
            // TSV/CSV escape them.
            func text(_ t: String) -> String { TableWriter.escaped(t, tsv: format == .tsv) }
            let version: String = s.quic.map { QUICVersion.name($0.version) } ?? s.tls?.versionName ?? ""
            let resumed: String = s.tls.map { $0.resumed ? ($0.resumption ?? "yes") : "no" } ?? ""
            var row: [String] = [s.label, s.transport.rawValue, s.start.iso8601(fractionDigits: 6), s.client.description, s.server.description]
            row.append(s.handshakeMilliseconds.map { String(format3: $0) } ?? "")
            row += [String(s.bytesFromClient), String(s.bytesFromServer), String(s.packets), String(s.gaps), String(s.gapBytes), s.history]
            row.append(text(s.weirds.map { $0.0.rawValue }.joined(separator: ",")))
            row += [version, s.tls?.sni.map(text) ?? "", s.tls?.alpn.map(text) ?? "", s.tls?.cipherName.map(text) ?? ""]
            row += [s.tls?.handshakeMilliseconds.map { String(format3: $0) } ?? "", resumed, text(s.seenText ?? "")]
            row += [s.tls?.ja4 ?? "", s.tls?.echOffered == true ? "offered" : "", String(format3: s.durationMilliseconds)]
            if let fields { row = fields.map { row[$0] } }
            return row.joined(separator: format == .csv ? "," : "\t") + "\n"
        }
    }

    /// One cell of the terminal table. Text from the wire (SNI, ALPN, what a non-HTTP connection
    /// showed) has its control characters shown as "?" (by `fit`), so a client cannot drive the
    /// terminal with its server name.
    private func tableCell(_ column: TableColumn, _ s: ConnectionSummary) -> String {
        switch column {
        case .id: return s.label
        case .time: return TableWriter.clock(s.start, millis: layout.first { $0.column == .time }.map { $0.width >= 12 } ?? true)
        case .client:
            // Too narrow for address and port: the address (the device) alone.
            let full = s.client.description
            let width = layout.first { $0.column == .client }?.width ?? 21
            return full.count <= width ? full : s.client.address.description
        case .server: return s.tls?.sni ?? s.server.description
        case .proto:
            var name = s.transport == .quic ? (s.quic.map { QUICVersion.name($0.version) } ?? "quic") : (s.tls?.versionName ?? "tcp")
            name = name.replacingAll("QUIC v", "quic").replacingAll("TLS ", "tls").replacingAll("SSL ", "ssl")
            if let alpn = s.tls?.alpn { name += " " + alpn }
            return name
        case .up: return Self.size(s.bytesFromClient)
        case .down: return Self.size(s.bytesFromServer)
        case .handshake: return s.handshakeMilliseconds.map { String(format3: ($0 * 10).rounded() / 10) } ?? "-"
        case .note:
            var parts: [String] = []
            if let tls = s.tls { parts.append(tls.decrypted ? "decrypted" : "encrypted") }
            parts += s.weirds.map { $0.0.rawValue }
            if let seen = s.seenText { parts.append(seen) }
            return parts.isEmpty ? "-" : parts.joined(separator: ", ")
        }
    }

    private func tableLine(_ cells: [(TableColumn, String)]) -> String {
        var line = ""
        for (i, (column, value)) in cells.enumerated() {
            let width = layout[i].width
            let cell = TableWriter.fit(value, width, keepEnd: column == .server || column == .client)
            let pad = String(repeating: " ", count: max(0, width - TableWriter.cells(cell)))
            line += (i == 0 ? "" : " ") + (column.rightAligned ? pad + cell : cell + pad)
        }
        while line.hasSuffix(" ") { line.removeLast() }
        return line
    }

    /// Bytes in at most six cells: 512, 12.3k, 4.5M, 1.2G (powers of 1000, as `ls -h --si`).
    static func size(_ n: UInt64) -> String {
        if n < 1000 { return String(n) }
        let units: [(Double, String)] = [(1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")]
        let v = Double(n)
        let (scale, unit) = units.last { v >= $0.0 } ?? units[0]
        let x = v / scale
        return (x < 100 ? String((x * 10).rounded() / 10) : String(Int(x.rounded()))) + unit
    }
}

extension String {
    public init(format3 value: Double) {
        let w = JSONWriter()
        w.number(value)
        self = w.text
    }
}
