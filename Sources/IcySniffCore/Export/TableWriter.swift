#if canImport(Glibc)
import Glibc
#endif

/// The tabular formats.
public enum TableFormat: Sendable {
    case table, tsv, csv, ndjson, heads
    /// One NDJSON row per WebSocket message.
    case webSocketMessages
}

/// A column of the tabular outputs (`--fields`); names are stable and documented in docs/OUTPUT.md (Tables).
public enum Field: String, CaseIterable, Sendable {
    case time, capture, connection, depth, client, server, method, host, path, url, version, proto = "protocol", status, reason,
         contentType = "type", requestSize = "req_size", size, encodedSize = "encoded_size",
         duration, connect, send, wait, receive, ssl, cache, tlsVersion = "tls_version", sni, stream,
         wsMessages = "ws_messages", wsBytes = "ws_bytes", flags, device

    public static let defaultColumns: [Field] = [.time, .client, .method, .url, .status, .proto, .contentType, .size, .duration, .cache, .flags]

    /// The names of a `--fields` list: comma-separated, spaces around them allowed
    /// (`'time, url'`), empty items ignored.
    public static func parseList(_ list: String) -> [String] {
        list.split(separator: ",").map { String($0.trimmingASCIIWhitespace()) }.filter { !$0.isEmpty }
    }
}

/// Writes transactions as a terminal table, TSV, CSV or NDJSON, one row as each completes.
public final class TableWriter {
    let format: TableFormat
    let output: OutputFile
    let options: ExportOptions
    var fields: [Field]
    /// Flush after every row (live captures).
    public var flushEachRow = false
    /// The names the run's devices gave themselves (DHCP, mDNS, …): the terminal table's client
    /// cell says who sent a request by name once the run knows it (`clientCell`).
    public var deviceNames: DeviceDirectory? = nil
    var wroteHeader = false
    /// False for the parts of a merged batch output after the first.
    public var writesHeader = true
    let color: Bool
    /// The terminal table's display cells per line, and each column's width in cells (the URL,
    /// path and host share what the others leave), decided once.
    private let width: Int
    private(set) var widths: [Int] = []
    /// Whether the table's time shows milliseconds (the column was not narrowed).
    private var clockMillis = true
    private let json = JSONWriter(indent: 0, capacity: 4096)
    private let row = ByteBuffer(capacity: 4096)

    /// `width`: the terminal table's width in cells (nil: the terminal's, `COLUMNS`, or 160).
    public init(format: TableFormat, output: OutputFile, options: ExportOptions, fields: [Field] = Field.defaultColumns, width: Int? = nil) {
        self.format = format
        self.output = output
        self.options = options
        self.fields = fields
        let env = getenv("NO_COLOR")
        let term = getenv("TERM").map { String(cString: $0) } ?? ""
        color = format == .table && output.isTerminal && env == nil && term != "dumb"
        self.width = width ?? Self.tableWidth(terminal: output.isTerminal)
        if format == .table {
            let layout = Self.tableLayout(fields, width: self.width, adaptive: fields == Field.defaultColumns)
            self.fields = layout.map(\.field)
            let share = max(16, Self.sharedWidth(layout.map(\.width), of: self.width) ?? 0)
            widths = layout.map { $0.width ?? share }
            clockMillis = layout.first { $0.field == .time }.map { ($0.width ?? 12) >= 12 } ?? true
        }
    }

    /// Writes one row. The transaction's cache verdict comes with it (`CacheJudgingSink`).
    public func consume(_ t: Transaction) {
        defer { if flushEachRow { output.flush() } }
        if !wroteHeader { if writesHeader { writeHeader() }; wroteHeader = true }
        switch format {
        case .ndjson: writeJSON(t)
        case .tsv, .csv: writeDelimited(t)
        case .table: output.write(tableRow(fields.map { value($0, t) }, status: t.response?.status ?? 0) + "\n")
        case .heads: writeHeads(t)
        case .webSocketMessages: writeWebSocketMessages(t)
        }
    }

    public func finish() {
        if !wroteHeader && format != .ndjson && format != .webSocketMessages && writesHeader { writeHeader() }
        output.flush()
    }

    public func writeHeader() {
        switch format {
        case .ndjson, .heads, .webSocketMessages: break
        case .tsv: output.write(fields.map(\.rawValue).joined(separator: "\t") + "\n")
        case .csv: output.write(fields.map(\.rawValue).joined(separator: ",") + "\n")
        case .table:
            let header = tableRow(fields.map { $0.rawValue.uppercased() }, status: 0)
            output.write((color ? "\u{1B}[1m" + header + "\u{1B}[0m" : header) + "\n")
        }
    }

    // MARK: values

    /// A value that does not exist: "-" in the terminal table, an empty cell in TSV and CSV (so
    /// that DuckDB, pandas and spreadsheets type a status or size column as a number).
    private var missing: String { format == .table ? "-" : "" }

    func value(_ field: Field, _ t: Transaction) -> String {
        let req = t.request, resp = t.response
        let missing = self.missing
        switch field {
        case .time: return format == .table ? clock(t.startTime) : t.startTime.iso8601(fractionDigits: 6)
        case .capture: return t.captureName
        case .connection: return t.connection.label
        case .depth: return String(t.depth)
        case .client: return clientCell(t.connection.client, mac: t.connection.deviceMAC)
        case .device: return t.connection.device?.description ?? missing
        case .server: return t.connection.server.description
        case .method: return req?.method ?? missing
        case .host: return t.host
        case .path: return req.map { EntryEncoder.redactURL($0.targetString, options: options, readable: true) } ?? missing
        case .url:
            guard req != nil else { return missing }
            let url = EntryEncoder.redactURL(t.url, options: options, readable: true)
            // In a table http:// is the default and says nothing (host + path); https:// is kept.
            if format == .table, url.hasPrefix("http://") { return String(url.dropFirst(7)) }
            return url
        case .version: return resp?.versionText ?? req?.versionText ?? missing
        case .proto: return t.protocolName == "-" ? missing : t.protocolName
        case .stream: return t.streamID.map { String($0) } ?? missing
        case .status: return resp.map { $0.isHTTP09 ? "0.9" : String($0.status) } ?? missing
        case .reason: return resp?.reason ?? missing
        case .contentType:
            // A WebSocket's upgrade has no content; DevTools types it "websocket".
            if t.webSocket != nil && resp?.headers.contains(.contentType) != true { return "websocket" }
            let ct = resp?.headers.first(.contentType) ?? missing
            return String(ct.split(separator: ";").first ?? Substring(missing)).trimmingCharacters(in: " ")
        case .requestSize: return req.map { String($0.body.decodedBytes) } ?? missing
        case .size: return resp.map { String($0.body.decodedBytes) } ?? missing
        case .encodedSize: return resp.map { String($0.body.bytes) } ?? missing
        case .duration: return ms(t.timings.total)
        case .connect: return t.timings.connect < 0 ? missing : ms(t.timings.connect)
        case .send: return ms(t.timings.send)
        case .wait: return ms(t.timings.wait)
        case .receive: return ms(t.timings.receive)
        case .ssl: return t.timings.ssl < 0 ? missing : ms(t.timings.ssl)
        case .tlsVersion: return t.connection.tlsVersion ?? missing
        case .sni: return t.connection.sni ?? missing
        case .cache: return t.cache?.label ?? missing
        case .wsMessages: return t.webSocket.map { String($0.sent.messages + $0.received.messages) } ?? missing
        case .wsBytes: return t.webSocket.map { String($0.sent.bytes + $0.received.bytes) } ?? missing
        case .flags:
            let w = t.allWeirds.filter { $0 != .midstreamPickup }
            return w.isEmpty ? missing : w.map(\.rawValue).joined(separator: ",")
        }
    }

    /// A duration's cell: ms, one decimal in the table, three in TSV and CSV.
    func ms(_ v: Double) -> String {
        let out = ByteBuffer(capacity: 64)
        JSONWriter.appendNumber(v, decimals: format == .table ? 1 : 3, to: out)
        return out.text
    }

    /// The table's time: local time of day, as tcpdump prints it (TSV, NDJSON and HAR keep ISO
    /// 8601 in UTC), with milliseconds unless the column was narrowed.
    func clock(_ t: Timestamp) -> String { Self.clock(t, millis: clockMillis) }

    static func clock(_ t: Timestamp, millis clockMillis: Bool) -> String {
        var seconds = time_t(t.nanoseconds >= 0 ? t.nanoseconds / 1_000_000_000 : (t.nanoseconds - 999_999_999) / 1_000_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return "-" }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let text = "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
        if !clockMillis { return text }
        let millis = Int((t.nanoseconds % 1_000_000_000 + 1_000_000_000) % 1_000_000_000 / 1_000_000)
        return text + "." + String(repeating: "0", count: millis < 10 ? 2 : millis < 100 ? 1 : 0) + String(millis)
    }

    // MARK: TSV and CSV

    /// One TSV or CSV row, written into a reused buffer: numbers, times and addresses directly,
    /// header values from the header bytes, other text escaped byte by byte.
    private func writeDelimited(_ t: Transaction) {
        row.removeAll()
        let separator: UInt8 = format == .tsv ? 0x09 : 0x2C
        for (i, field) in fields.enumerated() {
            if i > 0 { row.append(separator) }
            appendCell(field, t)
        }
        row.append(0x0A)
        output.write(row.buffer)
    }

    private func appendCell(_ field: Field, _ t: Transaction) {
        let req = t.request, resp = t.response
        switch field {
        case .time: t.startTime.appendISO8601(to: row, fractionDigits: 6)
        case .client: t.connection.client.appendText(to: row)
        case .server: t.connection.server.appendText(to: row)
        case .depth: JSONWriter.appendInteger(Int64(t.depth), to: row)
        case .status:
            guard let resp, !resp.isHTTP09 else { appendText(value(field, t)); return }
            JSONWriter.appendInteger(Int64(resp.status), to: row)
        case .size, .requestSize, .encodedSize:
            guard let m = field == .requestSize ? req : resp else { return }   // missing: an empty cell
            JSONWriter.appendInteger(Int64(clamping: field == .encodedSize ? m.body.bytes : m.body.decodedBytes), to: row)
        case .duration: JSONWriter.appendNumber(t.timings.total, decimals: 3, to: row)
        case .send: JSONWriter.appendNumber(t.timings.send, decimals: 3, to: row)
        case .wait: JSONWriter.appendNumber(t.timings.wait, decimals: 3, to: row)
        case .receive: JSONWriter.appendNumber(t.timings.receive, decimals: 3, to: row)
        case .contentType:
            guard let resp, let i = resp.headers.index(of: .contentType) else {
                if t.webSocket != nil { appendText("websocket") }
                return
            }
            let done = resp.headers.withValueBytes(at: i) { v -> Bool in
                guard isASCII(v) else { return false }
                // The media type: the first non-empty part before a ';', spaces trimmed.
                var start = 0
                while start < v.count {
                    var end = start
                    while end < v.count && v[end] != 0x3B { end += 1 }
                    if end > start {
                        var lo = start, hi = end
                        while lo < hi && v[lo] == 0x20 { lo += 1 }
                        while hi > lo && v[hi - 1] == 0x20 { hi -= 1 }
                        appendEscaped(UnsafeBufferPointer(rebasing: v[lo..<hi]))
                        return true
                    }
                    start = end + 1
                }
                return true
            }
            if !done { appendText(value(field, t)) }
        case .flags where format == .tsv:
            var first = true
            for w in t.allWeirds where w != .midstreamPickup {
                if !first { row.append(0x2C) }
                first = false
                appendText(w.rawValue)
            }
        default: appendText(value(field, t))
        }
    }

    private func appendText(_ s: String) {
        var s = s
        s.withUTF8 { appendEscaped($0) }
    }

    private func appendEscaped(_ b: UnsafeBufferPointer<UInt8>) {
        Self.appendEscaped(b, tsv: format == .tsv, to: row)
    }

    /// One cell of free text, escaped for TSV or CSV as `appendEscaped` does (`--connections`
    /// uses it too).
    static func escaped(_ text: String, tsv: Bool) -> String {
        let out = ByteBuffer(capacity: text.utf8.count + 8)
        var text = text
        text.withUTF8 { appendEscaped($0, tsv: tsv, to: out) }
        return String(decoding: UnsafeBufferPointer(start: out.base, count: out.count), as: UTF8.self)
    }

    /// TSV: backslash, tab, LF and CR as `\\`, `\t`, `\n`, `\r`. CSV (RFC 4180): a cell with a
    /// comma, quote, CR or LF is quoted, its quotes doubled.
    static func appendEscaped(_ b: UnsafeBufferPointer<UInt8>, tsv: Bool, to row: ByteBuffer) {
        if tsv {
            var run = 0
            for (i, c) in b.enumerated() where c == 0x5C || c == 0x09 || c == 0x0A || c == 0x0D {
                row.append(UnsafeBufferPointer(rebasing: b[run..<i]))
                row.append(0x5C)
                row.append(c == 0x5C ? 0x5C : c == 0x09 ? 0x74 : c == 0x0A ? 0x6E : 0x72)
                run = i + 1
            }
            row.append(UnsafeBufferPointer(rebasing: b[run...]))
        } else {
            guard b.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else {
                row.append(b)
                return
            }
            row.append(0x22)
            for c in b {
                row.append(c)
                if c == 0x22 { row.append(0x22) }
            }
            row.append(0x22)
        }
    }

    // MARK: table

    /// The client as a cell: in the terminal table, who it is — its device's own name when the
    /// run has learned one (on a hotspot an address is one phone's, then another's), else its
    /// address (the port is TSV's, CSV's and NDJSON's); elsewhere the address and port.
    func clientCell(_ client: Endpoint, mac: UInt64) -> String {
        guard format == .table else { return client.description }
        if mac != 0, let name = deviceNames?.names(of: mac).first { return name }
        return client.address.description
    }

    func tableRow(_ values: [String], status: Int) -> String {
        var cells: [String] = []
        for (i, (f, v)) in zip(fields, values).enumerated() {
            let w = widths[i]
            var cell = fit(v, w, keepEnd: f == .url || f == .path || f == .host)
            let pad = String(repeating: " ", count: max(0, w - Self.cells(cell)))
            let numeric = [.size, .encodedSize, .requestSize, .duration, .connect, .send, .wait, .receive].contains(f)
            cell = numeric ? pad + cell : cell + pad
            if color && f == .status && status > 0 {
                let code = status >= 500 ? "31" : status >= 400 ? "33" : status >= 300 ? "36" : "32"
                cell = "\u{1B}[\(code)m\(cell)\u{1B}[0m"
            }
            // What the cache could have served: reverse video, the one verdict that asks for action.
            if color && f == .cache && v == "AVOIDABLE" { cell = "\u{1B}[1;7;33m\(cell)\u{1B}[0m" }
            cells.append(cell)
        }
        var row = cells.joined(separator: " ")
        while row.hasSuffix(" ") { row.removeLast() }
        return row
    }

    /// Shortens to `width` display cells with an ellipsis, in the middle for URLs (they keep
    /// both ends); wide characters count two cells, combining marks none.
    private func fit(_ s: String, _ width: Int, keepEnd: Bool) -> String { Self.fit(s, width, keepEnd: keepEnd) }

    // MARK: heads (-V)

    /// One transaction as its heads: a line saying when, where, how long and what was odd, then
    /// the request head and the response head as sent (control characters shown as "?",
    /// secrets redacted unless --keep-secrets), each field on its line.
    private func writeHeads(_ t: Transaction) {
        var text = "── \(t.startTime.iso8601(fractionDigits: 3))  \(t.connection.label)  \(t.connection.client.description) → "
            + "\(t.connection.server.description)  \(ms(t.timings.total)) ms"
        if let cache = t.cache?.label { text += "  cache: \(cache)" }
        let flags = value(.flags, t)
        if !flags.isEmpty { text += "  flags: " + flags }
        text += "\n"
        func head(_ m: HTTPMessage, startLine: String) {
            text += Self.printable(startLine) + "\n"
            for h in m.headers { text += Self.printable("\(h.name): \(EntryEncoder.redact(header: h, options: options, readable: true))") + "\n" }
            if m.body.bytes > 0 || m.body.decodedBytes > 0 {
                text += "[body: \(m.body.bytes) bytes" + (m.body.decodedBytes != m.body.bytes ? ", \(m.body.decodedBytes) decoded" : "") + "]\n"
            }
        }
        if let r = t.request {
            head(r, startLine: "\(r.method) \(EntryEncoder.redactURL(r.targetString, options: options, readable: true)) \(r.versionText)")
        } else {
            text += "(request not captured)\n"
        }
        text += "\n"
        for m in t.interimResponses { head(m, startLine: "\(m.versionText) \(m.status) \(m.reason)") }
        if let r = t.response {
            head(r, startLine: r.isHTTP09 ? "(HTTP/0.9 reply: no status line)" : "\(r.versionText) \(r.status) \(r.reason)")
        } else {
            text += "(no response)\n"
        }
        if let ws = t.webSocket { text += Self.webSocketLines(ws) }
        text += "\n"
        output.write(text)
    }

    // MARK: NDJSON

    /// `--websocket-messages`: one row per message of the socket the transaction opened (none
    /// for other transactions), in the order the messages began.
    private func writeWebSocketMessages(_ t: Transaction) {
        guard let ws = t.webSocket else { return }
        for m in ws.messages {
            json.reset()
            json.beginObject()
            json.plainString("ts") { m.time.appendISO8601(to: $0, fractionDigits: 6) }
            if !t.captureName.isEmpty { json.string("capture", t.captureName) }
            json.plainString("connection") { ConnectionSnapshot.appendLabel(of: t.connection.id, to: $0) }
            json.plainString("client_ip") { t.connection.client.address.appendText(to: $0) }
            json.int("client_port", t.connection.client.port)
            json.plainString("server_ip") { t.connection.server.address.appendText(to: $0) }
            json.int("server_port", t.connection.server.port)
            json.string("url", EntryEncoder.redactURL(t.url, options: options))
            json.string("direction", m.fromClient ? "send" : "receive")
            json.int("opcode", m.opcode)
            json.string("type", m.opcode == 1 ? "text" : "binary")
            json.int("size", m.size)
            json.int("wire_size", m.wireSize)
            json.bool("compressed", m.compressed)
            json.key("problem"); if let p = m.problem { json.string(p.rawValue) } else { json.null() }
            if let data = m.data, options.includeBodies {
                if m.opcode == 1 && EntryEncoder.isUTF8(data) {
                    json.key("data")
                    EntryEncoder.writeBodyText(data, utf8: true, to: json)
                } else {
                    json.plainString("data") { out in data.withUnsafeBufferPointer { Base64.append($0, to: out) } }
                    json.string("encoding", "base64")
                }
                if m.truncated { json.bool("truncated", true) }
            }
            json.endObject()
            json.append(0x0A)
            output.write(json.buffer)
        }
        if ws.dropped > 0 {
            output.write("{\"connection\":\"\(t.connection.label)\",\"messages_not_listed\":\(ws.dropped)}\n")
        }
    }

    private func writeJSON(_ t: Transaction) {
        json.reset()
        NDJSONEncoder.write(t, to: json, options: options)
        json.append(0x0A)
        output.write(json.buffer)
        lastRowSequence = t.sequence
    }

    /// The transaction whose NDJSON row `json` holds (0: none; set only by `writeJSON`).
    private var lastRowSequence: UInt64 = 0

    /// `t`'s NDJSON row (no line break) when it is the row this writer wrote last, else nil: lent
    /// until the next `consume`, for a second consumer of the same row (`--serve`'s feed).
    func row(of t: Transaction) -> UnsafeBufferPointer<UInt8>? {
        guard lastRowSequence == t.sequence, t.sequence != 0 else { return nil }
        let b = json.buffer
        return UnsafeBufferPointer(rebasing: b[..<(b.count - 1)])
    }
}
