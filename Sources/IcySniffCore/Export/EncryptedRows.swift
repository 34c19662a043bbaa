/// What the transaction outputs (table, TSV, CSV, NDJSON) show of an encrypted connection that no
/// key opens — not a HAR, whose consumers replay entries (the estimates only with
/// `--har-estimates`, `EntryEncoder.writeEstimate`):
/// - a row of the connection when its handshake shows that no key opens it, and again when it
///   ends (`writeEncrypted`): NDJSON `"type": "connection"`, the table's method `TLS` or `QUIC`;
/// - the exchanges estimated from its records (`RecordPattern`), written when it ends
///   (`writeInferred`), each saying it is an estimate: NDJSON `"inferred": true`, the table's
///   method `≈`, the flags `inferred`; no method, status, URL path or cache verdict.
extension TableWriter {
    public func writeInferred(of connection: Connection) {
        guard let traffic = connection.tls?.inferred, !traffic.exchanges.isEmpty else { return }
        for x in traffic.exchanges {
            writeRow({ inferredValue($0, x, traffic, connection) }, json: { writeInferredJSON(x, traffic, connection) })
        }
        if flushEachRow { output.flush() }
    }

    /// One row that is no transaction, in the run's format: `value` gives its TSV, CSV and table
    /// cells (`table`: a table row of its own instead), `json` writes its NDJSON line.
    private func writeRow(_ value: (Field) -> String, table: (() -> String)? = nil, json: () -> Void) {
        guard format != .heads && format != .webSocketMessages else { return }
        if !wroteHeader { if writesHeader { writeHeader() }; wroteHeader = true }
        switch format {
        case .ndjson: json()
        case .tsv, .csv:
            output.write(fields.map { Self.escaped(value($0), tsv: format == .tsv) }.joined(separator: format == .tsv ? "\t" : ",") + "\n")
        case .table:
            output.write((table?() ?? tableRow(fields.map(value), status: 0)) + "\n")
        case .heads, .webSocketMessages:
            break
        }
    }

    /// `https://SNI/` (or the server's address; inside a proxy tunnel, its target's port): the
    /// exchange's origin; its path is not known.
    static func inferredURL(_ c: Connection) -> String { inferredURL(sni: c.tls?.sni, tunnel: c.tunnel, server: c.server) }

    static func inferredURL(sni: String?, tunnel: ProxyTunnel?, server: Endpoint) -> String {
        let target = tunnel?.hostAndPort
        let host = sni ?? target?.host ?? (server.address.description.contains(":") ? "[\(server.address)]" : server.address.description)
        let port = target.map { Int($0.port ?? 443) } ?? Int(server.port)
        return "https://\(host)" + (port == 443 ? "/" : ":\(port)/")
    }

    private func inferredValue(_ field: Field, _ x: EncryptedExchange, _ traffic: InferredTraffic, _ c: Connection) -> String {
        let missing = format == .table ? "-" : ""
        switch field {
        case .time: return format == .table ? clock(x.requestStart) : x.requestStart.iso8601(fractionDigits: 6)
        case .connection: return c.label
        case .capture: return c.captureName
        case .client: return clientCell(c.client, mac: c.deviceMAC)
        case .device: return c.deviceMAC == 0 ? missing : MACAddress(raw: c.deviceMAC).description
        case .server: return c.server.description
        case .method: return format == .table ? "≈" : missing
        case .host, .sni: return c.tls?.sni ?? missing
        case .url: return format == .table ? String(Self.inferredURL(c).dropFirst(8)) : Self.inferredURL(c)
        case .proto: return traffic.protocolName
        case .requestSize: return String(x.requestBytes)
        case .size: return x.responseBytes.map(String.init) ?? missing
        case .duration: return x.totalMilliseconds.map(ms) ?? missing
        case .send: return x.sendMilliseconds.map(ms) ?? missing
        case .wait: return x.waitMilliseconds.map(ms) ?? missing
        case .receive: return x.receiveMilliseconds.map(ms) ?? missing
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
        if c.deviceMAC != 0 { w.string("device", MACAddress(raw: c.deviceMAC).description) }
        w.string("server_ip", c.server.address.description)
        w.int("server_port", c.server.port)
        w.key("method"); w.null()
        w.optionalString("host", c.tls?.sni)
        w.string("url", Self.inferredURL(c))
        w.string("protocol", traffic.protocolName)
        w.bool("protocol_inferred", traffic.protocolInferred)
        w.key("status"); w.null()
        x.writeMeasures(to: w)
        w.optionalString("tls_version", c.tls?.versionName)
        w.optionalString("sni", c.tls?.sni)
        w.endObject()
        w.append(0x0A)
        output.write(w.buffer)
    }
}

extension EncryptedExchange {
    /// Its sizes and times as NDJSON fields: the estimate's row, and the web view's list of a
    /// connection's estimates (`ConnectionSummary.write(to:estimates:)`).
    func writeMeasures(to w: JSONWriter) {
        w.int("request_bytes", requestBytes)
        w.key("response_bytes"); if let b = responseBytes { w.int(b) } else { w.null() }
        // Times only for an exchange alone on its connection (HTTP/1.1's always are).
        w.optionalNumber("time_ms", totalMilliseconds)
        w.optionalNumber("send_ms", sendMilliseconds)
        w.optionalNumber("wait_ms", waitMilliseconds)
        w.optionalNumber("receive_ms", receiveMilliseconds)
        w.bool("alone", alone)
        w.int("request_records", requestRecords)
        w.int("response_records", responseRecords)
    }
}

/// When an encrypted connection's row is written: its handshake (the ServerHello showed that no
/// key opens it) or its end.
public enum EncryptedMoment: String, Sendable { case handshake, end }

extension TableWriter {
    /// A row of an encrypted connection that no key opens (`Connection.encryptedWithoutKeys`).
    public func writeEncrypted(_ c: ConnectionSummary, at moment: EncryptedMoment, captureName: String) {
        writeRow({ encryptedValue($0, c, moment, captureName) }, table: { self.encryptedTableRow(c, moment) },
                 json: { writeEncryptedJSON(c, moment, captureName) })
        if flushEachRow { output.flush() }
    }

    /// The row's time: the handshake's first byte, or the connection's last packet.
    static func time(_ c: ConnectionSummary, _ moment: EncryptedMoment) -> Timestamp {
        moment == .handshake ? (c.tls?.handshakeStart ?? c.start) : c.end
    }

    /// The protocol the row names: at the end what the records said (`InferredTraffic`); at the
    /// handshake the ALPN it shows, or an offer of one protocol alone; nil: not known yet.
    static func encryptedProtocol(_ c: ConnectionSummary, _ moment: EncryptedMoment) -> String? {
        if moment == .end, let inferred = c.tls?.inferred { return inferred.protocolName }
        if let alpn = c.tls?.alpn { return alpn }
        if let offered = c.tls?.alpnOffered, offered.count == 1 { return offered[0] }
        return nil
    }

    /// "TLS 1.3", "QUIC v1"; "TLS" before a ServerHello named the version.
    static func encryptedVersion(_ c: ConnectionSummary) -> String {
        if let q = c.quic { return q.versionName }
        return c.tls?.versionName ?? "TLS"
    }

    /// Why no key opens it, from its anomalies: the suite, a key log without its secrets, or no
    /// key log at all.
    static func keysMissing(_ c: ConnectionSummary) -> (name: String, text: String) {
        let weirds = Set(c.weirds.map(\.0))
        if weirds.contains(.tlsCipherUnsupported) { return ("cipher_unsupported", "a suite icy-sniff cannot decrypt") }
        if weirds.contains(.tlsDecryptionFailed) || weirds.contains(.quicDecryptionFailed) {
            return ("decryption_failed", "the key log's secrets did not decrypt it")
        }
        if weirds.contains(.tlsKeysNotFound) || weirds.contains(.quicKeysNotFound) { return ("not_in_key_log", "not in the key log") }
        return ("none", "no key")
    }

    /// The table's row: the transaction columns up to the URL, then what a person wants to read
    /// of the connection, across the columns a transaction's status, type and size take.
    private func encryptedTableRow(_ c: ConnectionSummary, _ moment: EncryptedMoment) -> String {
        guard let urlColumn = fields.firstIndex(where: { $0 == .url || $0 == .host }) else {
            return tableRow(fields.map { encryptedValue($0, c, moment, "") }, status: 0)
        }
        var left = tableRow(fields[...urlColumn].map { encryptedValue($0, c, moment, "") }, status: 0)
        let leftWidth: Int = widths[...urlColumn].reduce(0, +) + urlColumn
        left += String(repeating: " ", count: max(0, leftWidth - Self.cells(left)))
        let rightColumns: Int = fields.count - urlColumn - 1
        let room: Int = widths[(urlColumn + 1)...].reduce(0, +) + rightColumns - 1
        var text = Self.fit(Self.encryptedText(c, moment), max(8, room), keepEnd: false)
        if color { text = "\u{1B}[2m" + text + "\u{1B}[0m" }
        return left + " " + text
    }

    /// `TLS 1.3 handshake: offers h2,http/1.1; no key` and
    /// `ended after 2.3 s: h2 (inferred), ≥12 requests, ↑1204 B ↓53 kB` (bytes from the client,
    /// from the server).
    static func encryptedText(_ c: ConnectionSummary, _ moment: EncryptedMoment) -> String {
        let tls = c.tls
        switch moment {
        case .handshake:
            var parts = [encryptedVersion(c) + " handshake"]
            if let alpn = tls?.alpn { parts.append("ALPN " + alpn) }
            else if let offered = tls?.alpnOffered, !offered.isEmpty { parts.append("offers " + offered.joined(separator: ",")) }
            if tls?.resumed == true { parts.append("resumed") }
            return parts.joined(separator: ", ") + "; " + keysMissing(c).text
        case .end:
            var out = "ended after " + Self.duration(c.durationMilliseconds) + ": "
            var parts: [String] = []
            if tls?.version == 0 && c.quic == nil {
                parts.append("no ServerHello")
            } else if let inferred = tls?.inferred {
                parts.append(inferred.protocolName + (inferred.protocolInferred ? " (inferred)" : ""))
                if let n = inferred.exchangeCount {
                    let noun = inferred.protocolName == "http/1.1" ? "exchange" : "request"
                    parts.append((inferred.exact ? "" : "≥") + "\(n) \(noun)" + (n == 1 ? "" : "s"))
                }
            } else {
                parts.append("no application data")
            }
            parts.append("↑" + ReportWriter.bytes(c.bytesFromClient) + " ↓" + ReportWriter.bytes(c.bytesFromServer))
            out += parts.joined(separator: ", ")
            return out
        }
    }

    /// "9.8 ms", "2.3 s", "125 s".
    static func duration(_ milliseconds: Double) -> String {
        let figure = ByteBuffer(capacity: 16)
        if milliseconds < 1000 {
            JSONWriter.appendNumber(milliseconds, decimals: 1, to: figure)
            return figure.text + " ms"
        }
        JSONWriter.appendNumber(milliseconds / 1000, decimals: milliseconds < 10_000 ? 1 : 0, to: figure)
        return figure.text + " s"
    }

    private func encryptedValue(_ field: Field, _ c: ConnectionSummary, _ moment: EncryptedMoment, _ captureName: String) -> String {
        let missing = format == .table ? "-" : ""
        let url = Self.inferredURL(sni: c.tls?.sni, tunnel: c.tunnel, server: c.server)
        switch field {
        case .time:
            let t = Self.time(c, moment)
            return format == .table ? clock(t) : t.iso8601(fractionDigits: 6)
        case .connection: return c.label
        case .capture: return captureName
        case .client: return clientCell(c.client, mac: c.deviceMAC)
        case .device: return c.deviceMAC == 0 ? missing : MACAddress(raw: c.deviceMAC).description
        case .server: return c.server.description
        case .method: return format == .table ? (c.quic == nil ? "TLS" : "QUIC") : missing
        case .host, .sni: return c.tls?.sni ?? missing
        case .url: return format == .table ? String(url.dropFirst(8)) : url
        case .proto: return Self.encryptedProtocol(c, moment) ?? missing
        case .requestSize: return moment == .end ? String(c.bytesFromClient) : missing
        case .size: return moment == .end ? String(c.bytesFromServer) : missing
        case .duration: return moment == .end ? ms(c.durationMilliseconds) : missing
        case .tlsVersion: return Self.encryptedVersion(c)
        case .flags: return "encrypted_connection," + (moment == .handshake ? "handshake" : "end")
        default: return missing
        }
    }

    private func writeEncryptedJSON(_ c: ConnectionSummary, _ moment: EncryptedMoment, _ captureName: String) {
        let w = JSONWriter()
        let tls = c.tls
        w.beginObject()
        w.string("ts", Self.time(c, moment).iso8601(fractionDigits: 6))
        if !captureName.isEmpty { w.string("capture", captureName) }
        w.string("type", "connection")
        w.string("event", moment.rawValue)
        w.string("connection", c.label)
        w.string("transport", c.transport.rawValue)
        w.string("client_ip", c.client.address.description)
        w.int("client_port", c.client.port)
        if c.deviceMAC != 0 { w.string("device", MACAddress(raw: c.deviceMAC).description) }
        w.string("server_ip", c.server.address.description)
        w.int("server_port", c.server.port)
        w.optionalString("host", tls?.sni)
        w.string("url", Self.inferredURL(sni: tls?.sni, tunnel: c.tunnel, server: c.server))
        w.optionalString("protocol", Self.encryptedProtocol(c, moment))
        w.bool("protocol_inferred", moment == .end && tls?.inferred?.protocolInferred == true)
        w.string("tls_version", Self.encryptedVersion(c))
        w.optionalString("sni", tls?.sni)
        w.optionalString("alpn", tls?.alpn)
        w.key("alpn_offered"); w.beginArray(); for p in tls?.alpnOffered ?? [] { w.string(p) }; w.endArray()
        w.optionalString("cipher", tls?.cipherName)
        w.bool("resumed", tls?.resumed ?? false)
        w.optionalString("ja4", tls?.ja4)
        w.optionalString("ech", tls?.echOffered == true ? "offered" : nil)
        w.string("keys", Self.keysMissing(c).name)
        if moment == .end {
            w.number("duration_ms", c.durationMilliseconds)
            w.int("bytes_from_client", c.bytesFromClient)
            w.int("bytes_from_server", c.bytesFromServer)
            w.key("exchanges"); if let n = tls?.inferred?.exchangeCount { w.int(n) } else { w.null() }
            w.bool("exchanges_exact", tls?.inferred?.exchangeCount != nil && tls?.inferred?.exact == true)
        }
        w.key("flags"); w.beginArray(); for (k, _) in c.weirds { w.string(k.rawValue) }; w.endArray()
        w.endObject()
        w.append(0x0A)
        output.write(w.buffer)
    }
}

extension EntryEncoder {
    /// An estimated exchange as a HAR entry (`--har-estimates`): no method, status, headers or
    /// path (the URL is `https://SNI/`); sizes and timings as the NDJSON row has them, the
    /// response's only when the exchange was alone; `_inferred: true` and `_alone` say what it is.
    static func writeEstimate(_ x: EncryptedExchange, _ traffic: InferredTraffic, _ c: Connection, to w: JSONWriter) {
        let send = x.sendMilliseconds ?? 0, wait = x.waitMilliseconds ?? 0, receive = x.receiveMilliseconds ?? 0
        w.beginObject()
        w.string("startedDateTime", x.requestStart.iso8601(fractionDigits: 3))
        w.number("time", send + wait + receive)
        w.key("request"); w.beginObject()
        w.string("method", "")
        w.string("url", TableWriter.inferredURL(c))
        w.string("httpVersion", traffic.protocolName)
        w.key("cookies"); w.beginArray(); w.endArray()
        w.key("headers"); w.beginArray(); w.endArray()
        w.key("queryString"); w.beginArray(); w.endArray()
        w.int("headersSize", -1)
        w.int("bodySize", -1)
        w.int("_messageBytes", x.requestBytes)
        w.endObject()
        w.key("response"); w.beginObject()
        writeUnseenResponse(httpVersion: traffic.protocolName, to: w)
        w.key("_messageBytes"); if let b = x.responseBytes { w.int(b) } else { w.null() }
        w.endObject()
        w.key("cache"); w.beginObject(); w.endObject()
        w.key("timings"); w.beginObject()
        w.number("blocked", -1); w.number("dns", -1); w.number("connect", -1); w.number("ssl", -1)
        w.number("send", send); w.number("wait", wait); w.number("receive", receive)
        w.endObject()
        w.string("serverIPAddress", c.server.address.description)
        w.string("connection", c.label)
        w.string("_clientIPAddress", c.client.address.description)
        w.bool("_inferred", true)
        w.bool("_alone", x.alone)
        w.endObject()
    }
}
