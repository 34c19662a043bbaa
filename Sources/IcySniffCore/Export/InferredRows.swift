/// The rows of the exchanges estimated from an encrypted connection's records (`RecordPattern`):
/// written when the connection ends, after its handshake facts are known, in the formats that
/// list transactions for tools and people (table, TSV, CSV, NDJSON) — never in a HAR, whose
/// consumers replay entries. Each says it is an estimate: NDJSON `"inferred": true`, the table's
/// method column `≈`, the flags `inferred`; no method, status, URL path or cache verdict.
extension TableWriter {
    public func writeInferred(of connection: Connection) {
        guard let traffic = connection.tls?.inferred, !traffic.exchanges.isEmpty else { return }
        if !wroteHeader { if writesHeader { writeHeader() }; wroteHeader = true }
        for x in traffic.exchanges {
            switch format {
            case .ndjson: writeInferredJSON(x, traffic, connection)
            case .tsv, .csv:
                let cells = fields.map { inferredValue($0, x, traffic, connection) }
                output.write(cells.map { Self.escaped($0, tsv: format == .tsv) }.joined(separator: format == .tsv ? "\t" : ",") + "\n")
            case .table:
                output.write(tableRow(fields.map { inferredValue($0, x, traffic, connection) }, status: 0) + "\n")
            case .heads, .webSocketMessages:
                break
            }
        }
        if flushEachRow { output.flush() }
    }

    /// `https://SNI/` (or the server's address; inside a proxy tunnel, its target's port): the
    /// exchange's origin; its path is not known.
    static func inferredURL(_ c: Connection) -> String {
        let target = c.tunnel?.hostAndPort
        let host = c.tls?.sni ?? target?.host ?? (c.server.address.description.contains(":") ? "[\(c.server.address)]" : c.server.address.description)
        let port = target.map { Int($0.port ?? 443) } ?? Int(c.server.port)
        return "https://\(host)" + (port == 443 ? "/" : ":\(port)/")
    }

    private static func milliseconds(_ a: Timestamp?, _ b: Timestamp?) -> Double? {
        guard let a, let b else { return nil }
        return max(0, b.milliseconds(since: a))
    }

    private func inferredValue(_ field: Field, _ x: EncryptedExchange, _ traffic: InferredTraffic, _ c: Connection) -> String {
        let missing = format == .table ? "-" : ""
        func ms(_ v: Double?) -> String {
            guard let v else { return missing }
            let out = ByteBuffer(capacity: 32)
            JSONWriter.appendNumber(v, decimals: format == .table ? 1 : 3, to: out)
            return out.text
        }
        switch field {
        case .time: return format == .table ? Self.clock(x.requestStart, millis: true) : x.requestStart.iso8601(fractionDigits: 6)
        case .connection: return c.label
        case .capture: return c.captureName
        case .client: return c.client.description
        case .server: return c.server.description
        case .method: return format == .table ? "≈" : missing
        case .host, .sni: return c.tls?.sni ?? missing
        case .url: return format == .table ? String(Self.inferredURL(c).dropFirst(8)) : Self.inferredURL(c)
        case .proto: return traffic.protocolName
        case .requestSize: return String(x.requestBytes)
        case .size: return x.responseBytes.map(String.init) ?? missing
        case .duration: return ms(Self.milliseconds(x.requestStart, x.responseEnd ?? x.requestEnd))
        case .send: return ms(Self.milliseconds(x.requestStart, x.requestEnd))
        case .wait: return ms(Self.milliseconds(x.requestEnd, x.responseStart))
        case .receive: return ms(Self.milliseconds(x.responseStart, x.responseEnd))
        case .tlsVersion: return c.tls?.versionName ?? missing
        case .flags: return "inferred"
        default: return missing
        }
    }

    private func writeInferredJSON(_ x: EncryptedExchange, _ traffic: InferredTraffic, _ c: Connection) {
        let w = JSONWriter()
        w.beginObject()
        w.string("ts", x.requestStart.iso8601(fractionDigits: 6))
        if !c.captureName.isEmpty { w.string("capture", c.captureName) }
        w.bool("inferred", true)
        w.string("connection", c.label)
        w.string("client_ip", c.client.address.description)
        w.int("client_port", c.client.port)
        w.string("server_ip", c.server.address.description)
        w.int("server_port", c.server.port)
        w.key("method"); w.null()
        w.optionalString("host", c.tls?.sni)
        w.string("url", Self.inferredURL(c))
        w.string("protocol", traffic.protocolName)
        w.bool("protocol_inferred", traffic.protocolInferred)
        w.key("status"); w.null()
        w.int("request_bytes", x.requestBytes)
        w.key("response_bytes"); if let b = x.responseBytes { w.int(b) } else { w.null() }
        w.optionalNumber("time_ms", Self.milliseconds(x.requestStart, x.responseEnd ?? x.requestEnd))
        w.optionalNumber("send_ms", Self.milliseconds(x.requestStart, x.requestEnd))
        w.optionalNumber("wait_ms", Self.milliseconds(x.requestEnd, x.responseStart))
        w.optionalNumber("receive_ms", Self.milliseconds(x.responseStart, x.responseEnd))
        // HTTP/1.1 has one exchange in flight at a time.
        w.bool("alone", true)
        w.int("request_records", x.requestRecords)
        w.int("response_records", x.responseRecords)
        w.optionalString("tls_version", c.tls?.versionName)
        w.optionalString("sni", c.tls?.sni)
        w.endObject()
        w.append(0x0A)
        output.write(w.buffer)
    }
}
