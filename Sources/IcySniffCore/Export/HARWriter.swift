/// Version of icy-sniff written into outputs.
public enum IcySniffVersion {
    public static let current = "0.1.0"
}

/// Options that shape the exported entries.
public struct ExportOptions: Sendable {
    /// Put bodies into the output (`content.text`, `postData.text`).
    public var includeBodies = false
    /// Keep Cookie, Set-Cookie, Authorization values and secret query parameters as sent.
    public var keepSecrets = false
    /// Query parameter names whose values are redacted (case-insensitive).
    public var secretParameters: Set<String> = ["token", "access_token", "id_token", "refresh_token", "key", "api_key",
                                                "apikey", "password", "passwd", "pwd", "secret", "client_secret",
                                                "auth", "session", "sessionid", "sig", "signature"]
    public var pretty = true
    /// `--har-estimates`: the exchanges estimated from encrypted connections without keys are
    /// HAR entries too (`_inferred`), which HAR consumers would replay: not by default.
    public var harEstimates = false
    public init() {}
}

/// Writes HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) with icy-sniff's custom
/// fields (leading underscore).
///
/// HAR wants entries sorted by startedDateTime, but transactions complete in another order. Each
/// entry is therefore serialised when its transaction completes (the cache judgement and page
/// grouping are made then, in completion order) and spilled to a temporary file; only a small
/// index (start time, position) stays in memory and is sorted at the end. Memory stays flat in the
/// size of the capture; the index itself is sorted with bounded memory (`ExternalSort`).
public final class HARWriter: TransactionSink {
    private struct IndexEntry { var start: Timestamp; var sequence: UInt64; var offset: Int; var length: Int }
    private let index: ExternalSort<IndexEntry>
    private let spill: SpillStore
    /// `log._connections`: each connection that carried a transaction is serialised when it
    /// finishes (after its last transaction) and spilled like the entries, sorted by id at the end.
    private struct ConnectionRecord { var id: UInt64; var offset: Int; var length: Int }
    private let connectionIndex: ExternalSort<ConnectionRecord>
    private let connectionSpill = SpillStore(memoryLimit: 1 << 20)
    private let options: ExportOptions
    private var usedConnections: Set<UInt64> = []
    private var pages = PageGrouper()
    private let entry: JSONWriter
    /// `log._devices`: who is who, each device as `--devices --format ndjson` writes it (its
    /// names with their sources, addresses, hints), so that a HAR's `_device` addresses have
    /// names wherever the HAR is read. Set before `write` (the run's device table is complete
    /// then); none: the field is left out.
    public var devices: [DeviceSummary] = []

    public convenience init(options: ExportOptions = ExportOptions()) {
        self.init(options: options, spill: SpillStore())
    }

    /// `spill`: where the entries go until the end (tests give one with a file of their own);
    /// `indexMemory`: the bytes of index kept in memory before it is sorted in runs on disk.
    init(options: ExportOptions, spill: SpillStore, indexMemory: Int = 2 << 20) {
        self.spill = spill
        index = ExternalSort(memoryLimit: indexMemory) { ($0.start, $0.sequence) < ($1.start, $1.sequence) }
        connectionIndex = ExternalSort(memoryLimit: indexMemory / 4) { $0.id < $1.id }
        self.options = options
        entry = JSONWriter(indent: options.pretty ? 2 : 0, capacity: 1 << 14)
        entry.baseDepth = 3
        // An entry with a large body goes to the spill in slices as it is written.
        entry.drain = { [spill] in _ = spill.append($0) }
    }

    /// Serialises one entry. The transaction's cache verdict comes with it (`CacheJudgingSink`).
    public func consume(_ transaction: Transaction) {
        let pageref = pages.assign(transaction)
        usedConnections.insert(transaction.connection.id)
        entry.reset()
        // The record is contiguous in the spill: what the writer drained on the way, then the rest.
        let offset = spill.size
        EntryEncoder.writeEntry(transaction, pageref: pageref, to: entry, options: options)
        _ = spill.append(entry.buffer)
        index.append(IndexEntry(start: transaction.startTime, sequence: transaction.sequence, offset: offset, length: entry.drained + entry.count))
    }

    /// Entries found, after they were written, to hold bytes a later copy contradicted
    /// (`Connection.contradictedTransactions`, which leaves out those flagged when emitted): they
    /// get `_injection_suspected` at the end.
    private var contradicted = Set<UInt64>()
    static let injectionKey: StaticString = "_injection_suspected"

    /// Estimates' entries sort after transactions that start at the same microsecond.
    private var estimateSequence = UInt64.max / 2

    public func connectionFinished(_ connection: Connection) {
        if options.harEstimates, connection.encryptedWithoutKeys, let traffic = connection.tls?.inferred {
            for x in traffic.exchanges {
                entry.reset()
                let offset = spill.size
                EntryEncoder.writeEstimate(x, traffic, connection, to: entry)
                _ = spill.append(entry.buffer)
                estimateSequence += 1
                index.append(IndexEntry(start: x.requestStart, sequence: estimateSequence, offset: offset, length: entry.drained + entry.count))
            }
        }
        contradicted.formUnion(connection.contradictedTransactions)
        // Connections that carried a transaction, and every TLS connection (its transactions
        // may be encrypted).
        guard connection.bytesFromClient > 0 || connection.bytesFromServer > 0,
              usedConnections.remove(connection.id) != nil || connection.tls != nil else { return }
        entry.reset()
        ConnectionSummary(connection).write(to: entry)
        let offset = connectionSpill.append(entry.buffer)
        connectionIndex.append(ConnectionRecord(id: connection.id, offset: offset, length: entry.count))
    }

    /// One item of `log.pages` (the web view's feed sends the same).
    static func writePage(_ page: PageGrouper.Page, to w: JSONWriter, options: ExportOptions) {
        w.beginObject()
        w.string("startedDateTime", page.started.iso8601(fractionDigits: 3))
        w.string("id", page.id)
        w.string("title", EntryEncoder.redactURL(page.title, options: options))
        if let comment = page.comment { w.string("comment", comment) }
        // The device the page belongs to (HAR 1.2 custom field), as DevTools' per-device views need.
        w.string("_client", page.client.description)
        w.key("pageTimings"); w.beginObject()
        w.number("onContentLoad", -1); w.number("onLoad", -1)
        w.endObject()
        w.endObject()
    }

    public var count: Int { index.count }

    /// The bytes of the entries and connections waiting to be written.
    public var pendingBytes: Int { spill.size + connectionSpill.size }

    /// Writes the whole document.
    public func write(to out: OutputFile, comment: String? = nil) {
        let w = JSONWriter(indent: options.pretty ? 2 : 0, capacity: 1 << 16)
        w.beginObject()
        w.key("log")
        w.beginObject()
        w.string("version", "1.2")
        w.key("creator"); w.beginObject(); w.string("name", "icy-sniff"); w.string("version", IcySniffVersion.current); w.endObject()
        w.key("pages")
        w.beginArray()
        for page in pages.pages.sorted(by: { $0.started < $1.started }) { Self.writePage(page, to: w, options: options) }
        w.endArray()
        w.key("entries")
        w.beginArray()
        out.write(w.buffer)
        let entries = index.count, connections = connectionIndex.count
        let entriesWritten = writeSpilled(from: spill, to: out) { each in
            index.inOrder { each($0.offset, $0.length, self.contradicted.contains($0.sequence)) }
        }
        if entriesWritten == 0 {
            out.write(options.pretty ? Array("],\n    \"_connections\": ".utf8) : Array("],\"_connections\":".utf8))
        } else {
            out.write(options.pretty ? Array("\n    ],\n    \"_connections\": ".utf8) : Array("],\"_connections\":".utf8))
        }
        out.write(Array("[".utf8))
        let connectionsWritten = writeSpilled(from: connectionSpill, to: out) { each in
            connectionIndex.inOrder { each($0.offset, $0.length, false) }
        }
        out.write(Array((options.pretty && connectionsWritten > 0 ? "\n    ]" : "]").utf8))
        if !devices.isEmpty {
            let dw = JSONWriter(indent: options.pretty ? 2 : 0, capacity: 1 << 12)
            dw.baseDepth = 2
            dw.beginArray()
            for d in devices { DeviceListWriter.write(d, to: dw) }
            dw.endArray()
            out.write(Array((options.pretty ? ",\n    \"_devices\": " : ",\"_devices\":").utf8))
            out.write(dw.buffer)
        }
        if let comment {
            let cw = JSONWriter()
            cw.string(comment)
            out.write(Array((options.pretty ? ",\n    \"comment\": " : ",\"comment\":").utf8))
            out.write(cw.buffer)
        }
        out.write(options.pretty ? Array("\n  }\n}\n".utf8) : Array("}}\n".utf8))
        // The document stays valid JSON without what could not be read back; the run must not
        // look complete, so the output fails (exit code 3) with the reason.
        let lost = entries - entriesWritten + connections - connectionsWritten
        if lost > 0 {
            let reason = index.readFailure ?? connectionIndex.readFailure ?? spill.readFailure ?? connectionSpill.readFailure ?? "unknown error"
            out.fail("\(lost) HAR records could not be read back from the temporary file: \(reason)")
        }
    }
}

extension HARWriter {
    /// The items of a top-level array (entries, connections), copied from where they were
    /// spilled, one per line when pretty.
    /// Answers how many were written (a record that cannot be read back is left out).
    /// `flagged`: the record is an entry that gets `_injection_suspected` (written before the
    /// object's closing brace: the entry was encoded before its bytes were contradicted).
    /// `records` calls its argument with each record in order.
    private func writeSpilled(from store: SpillStore, to out: OutputFile,
                              records: ((_ offset: Int, _ length: Int, _ flagged: Bool) -> Void) -> Void) -> Int {
        let first = Array((options.pretty ? "\n      " : "").utf8)
        let separator = Array((options.pretty ? ",\n      " : ",").utf8)
        let flag = Array((options.pretty ? ",\n        \"\(Self.injectionKey)\": true" : ",\"\(Self.injectionKey)\":true").utf8)
        var written = 0
        records { offset, length, flagged in
            // A record of more than one slice that fails after its first leaves the document
            // cut (the output fails either way); one that cannot be read at all is left out whole.
            var at = offset
            let ok = store.withSlices(offset: offset, length: length) { bytes in
                if at == offset { out.write(written == 0 ? first : separator) }
                at += bytes.count
                // The flag goes before the closing brace, in the record's last slice.
                guard flagged, at == offset + length, let close = bytes.lastIndex(of: UInt8(ascii: "}")) else { return out.write(bytes) }
                var end = close
                while end > 0, [0x20, 0x0A].contains(bytes[end - 1]) { end -= 1 }
                out.write(UnsafeBufferPointer(rebasing: bytes[..<end]))
                out.write(flag)
                out.write(UnsafeBufferPointer(rebasing: bytes[end...]))
            }
            if ok { written += 1 }
        }
        return written
    }

}

/// What `--connections` and `log._connections` say about one connection, TCP or QUIC.
public struct ConnectionSummary: Sendable {
    public var id: UInt64
    public var transport: Transport
    /// What a QUIC connection showed (nil for TCP).
    public var quic: QUICInfo?
    public var client: Endpoint
    /// Its client's device (`Connection.deviceMAC`; 0: none known).
    public var deviceMAC: UInt64
    public var server: Endpoint
    public var start: Timestamp
    public var end: Timestamp
    public var handshakeMilliseconds: Double?
    public var bytesFromClient: UInt64
    public var bytesFromServer: UInt64
    public var gapBytes: UInt64
    public var gaps: Int
    public var packets: UInt64
    public var history: String
    public var clientEvidence: String
    public var weirds: [(Weird, Int)]
    /// What the cleartext TLS handshake showed, for a connection that carried TLS.
    public var tls: TLSInfo?
    /// Set for a connection that is not HTTP: what it showed.
    public var notHTTP: NonHTTPSample?
    /// Set when a proxy opened a tunnel on the connection.
    public var tunnel: ProxyTunnel?

    public init(_ c: Connection) {
        id = c.id
        transport = c.transport
        quic = c.quic
        client = c.client
        deviceMAC = c.deviceMAC
        server = c.server
        start = c.began
        end = c.times.last
        handshakeMilliseconds = c.quic?.handshakeMilliseconds ?? c.setup().transportMilliseconds
        bytesFromClient = c.bytesFromClient
        bytesFromServer = c.bytesFromServer
        gapBytes = c.tcp.map { $0.halves.0.gapBytes + $0.halves.1.gapBytes } ?? 0
        gaps = c.tcp.map { $0.halves.0.gaps + $0.halves.1.gaps } ?? 0
        packets = c.packets
        history = c.tcp.map { String(decoding: $0.history, as: UTF8.self) } ?? ""
        clientEvidence = c.clientEvidence?.rawValue ?? ""
        weirds = c.weirds.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        tls = c.tls
        notHTTP = c.notHTTP
        tunnel = c.tunnel
    }

    public var label: String { Connection.label(id) }

    /// From its first packet (a TCP connection's SYN) to its last, in ms.
    public var durationMilliseconds: Double { max(0, end.milliseconds(since: start)) }

    /// `--connections`'s `seen` cell: for a connection that is not HTTP, why, and the first line
    /// of each side.
    var seenText: String? {
        var parts: [String] = []
        if let tunnel { parts.append(tunnel.description) }
        if let n = notHTTP {
            parts.append(tunnel == nil ? "not HTTP: \(n.reason)" : n.reason)
            if let c = n.client { parts.append("client: \(c)") }
            if let s = n.server { parts.append("server: \(s)") }
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// A proxy tunnel: `{"protocol": "SOCKS5", "target": "host:port"}`.
    static func write(_ tunnel: ProxyTunnel, to w: JSONWriter, key: StaticString = "tunnel") {
        w.key(key); w.beginObject()
        w.string("protocol", tunnel.kind.rawValue)
        w.string("target", tunnel.target)
        w.endObject()
    }

    static func write(_ n: NonHTTPSample, to w: JSONWriter) {
        w.key("notHTTP"); w.beginObject()
        w.string("reason", n.reason)
        w.optionalString("client", n.client)
        w.optionalString("server", n.server)
        w.endObject()
    }

    /// `estimates`: also the exchanges its records showed (`inferred.estimates`, each with its
    /// `ts` and the fields of an estimate's NDJSON row) — the web view's, not `_connections`'.
    func write(to w: JSONWriter, estimates: Bool = false) {
        w.beginObject()
        w.string("id", label)
        w.string("transport", transport.rawValue)
        w.string("client", client.description)
        if deviceMAC != 0 { w.string("device", MACAddress(raw: deviceMAC).description) }
        w.string("server", server.description)
        w.string("start", start.iso8601(fractionDigits: 6))
        w.number("duration", end.milliseconds(since: start))
        w.optionalNumber("handshakeRTT", quic == nil ? handshakeMilliseconds : nil)
        w.int("bytesFromClient", bytesFromClient)
        w.int("bytesFromServer", bytesFromServer)
        w.int("packets", packets)
        w.int("gaps", gaps)
        w.int("missedBytes", gapBytes)
        w.string("history", history)
        w.key("anomalies"); w.beginArray(); for (k, _) in weirds { w.string(k.rawValue) }; w.endArray()
        if let tls { Self.write(tls, to: w) }
        if let quic { Self.write(quic, tls: tls, to: w) }
        if let inferred = tls?.inferred {
            Self.write(inferred, estimates: estimates ? TableWriter.inferredURL(sni: tls?.sni, tunnel: tunnel, server: server) : nil, to: w)
        }
        if let notHTTP { Self.write(notHTTP, to: w) }
        if let tunnel { Self.write(tunnel, to: w) }
        w.endObject()
    }

    /// `inferred`: without keys, what the records say (`RecordPattern`), an estimate.
    /// `estimates`: the estimates' URL (`https://SNI/`, as their rows write it), to list them
    /// too (the web view's feed), or nil.
    static func write(_ inferred: InferredTraffic, estimates url: String? = nil, to w: JSONWriter) {
        w.key("inferred"); w.beginObject()
        w.string("protocol", inferred.protocolName)
        w.string("protocol_from", inferred.protocolInferred ? "records" : "handshake")
        w.key("exchanges"); if let n = inferred.exchangeCount { w.int(n) } else { w.null() }
        w.bool("exchanges_exact", inferred.exchangeCount != nil && inferred.exact)
        if let url, !inferred.exchanges.isEmpty {
            w.string("url", url)
            w.key("estimates"); w.beginArray()
            for x in inferred.exchanges {
                w.beginObject()
                w.string("ts", x.requestStart.iso8601(fractionDigits: 6))
                x.writeMeasures(to: w)
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
    }

    /// `log._connections[].quic` (the contract of ../shared/corpus/quic/README.md). The handshake
    /// facts are repeated from the connection's `tls` object, where TLS over TCP has them too.
    static func write(_ q: QUICInfo, tls: TLSInfo?, to w: JSONWriter) {
        func version(_ v: UInt32) -> String { v == QUICVersion.v1 || v == QUICVersion.v2 ? QUICVersion.name(v) : QUICVersion.hex(v) }
        w.key("quic"); w.beginObject()
        w.string("version", version(q.version))
        w.string("versionName", QUICVersion.name(q.version))
        w.string("initialVersion", version(q.initialVersion))
        w.bool("versionNegotiation", q.versionNegotiation)
        if q.versionNegotiation {
            w.key("offeredVersions"); w.beginArray(); for v in q.offeredVersions { w.string(QUICVersion.hex(v)) }; w.endArray()
        }
        w.bool("retry", q.retry)
        if let tls {
            w.optionalString("sni", tls.sni)
            w.optionalString("alpn", tls.alpn)
            w.key("alpnOffered"); w.beginArray(); for p in tls.alpnOffered ?? [] { w.string(p) }; w.endArray()
            w.optionalString("cipher", tls.cipherName)
            w.bool("resumed", tls.resumed)
            w.key("earlyData"); if let e = tls.earlyDataAccepted { w.bool(e) } else { w.null() }
            w.optionalString("ja4", tls.ja4)
            w.optionalString("ech", tls.echOffered ? "offered" : nil)
        }
        w.string("originalDcid", QUICInfo.hex(q.cids.originalDCID))
        w.string("clientCid", QUICInfo.hex(q.cids.clientCID))
        w.optionalString("serverCid", q.cids.serverCID.map(QUICInfo.hex))
        w.key("keyUpdates"); if q.decrypted { w.int(q.keyUpdates) } else { w.null() }
        w.bool("migrated", q.migrated)
        w.key("clientPorts"); w.beginArray(); for p in q.clientPorts { w.int(p) }; w.endArray()
        w.optionalString("handshakeStart", q.handshakeStart?.iso8601(fractionDigits: 6))
        w.optionalString("handshakeEnd", q.handshakeEnd?.iso8601(fractionDigits: 6))
        w.optionalNumber("handshakeMs", q.handshakeMilliseconds)
        w.int("zeroRttPackets", q.zeroRTTPackets)
        w.int("datagramsFromClient", q.traffic.datagramsFromClient)
        w.int("datagramsFromServer", q.traffic.datagramsFromServer)
        w.int("packetsDecrypted", q.packetsDecrypted)
        w.int("packetsUndecryptable", q.packetsUndecryptable)
        w.optionalString("end", q.end)
        if q.decrypted { w.int("requests", q.requests); w.int("pushes", q.pushes) }
        w.bool("decrypted", q.decrypted)
        w.endObject()
    }

    /// `log._connections[].tls` (the contract of ../shared/corpus/tls/README.md).
    static func write(_ tls: TLSInfo, to w: JSONWriter) {
        w.key("tls"); w.beginObject()
        w.optionalString("sni", tls.sni)
        w.optionalString("alpn", tls.alpn)
        w.key("alpnOffered"); w.beginArray(); for p in tls.alpnOffered ?? [] { w.string(p) }; w.endArray()
        w.optionalString("version", tls.versionName)
        w.optionalString("cipher", tls.cipherName)
        w.optionalString("group", tls.groupName)
        w.bool("resumed", tls.resumed)
        w.optionalString("resumption", tls.resumption)
        w.bool("earlyDataOffered", tls.earlyDataOffered)
        w.key("earlyData"); if let e = tls.earlyDataAccepted { w.bool(e) } else { w.null() }
        w.bool("helloRetry", tls.helloRetry)
        w.optionalString("ja4", tls.ja4)
        w.optionalString("ech", tls.echOffered ? "offered" : nil)
        w.optionalString("handshakeStart", tls.handshakeStart?.iso8601(fractionDigits: 6))
        w.optionalString("handshakeEnd", tls.handshakeEnd?.iso8601(fractionDigits: 6))
        w.optionalNumber("handshakeMs", tls.handshakeMilliseconds)
        w.int("applicationBytesFromClient", tls.applicationBytesFromClient)
        w.int("applicationBytesFromServer", tls.applicationBytesFromServer)
        w.bool("decrypted", tls.decrypted)
        if tls.incomplete { w.bool("incomplete", true) }
        w.endObject()
    }
}
