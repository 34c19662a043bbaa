/// A transaction as compact bytes, holding what its HAR entry is made of, so that the entry can
/// be made later and elsewhere: the web view (`--serve`) keeps this for every transaction and
/// makes a HAR entry only for the ones a browser opens, searches or exports.
///
/// Input: an emitted `Transaction` (`write`). Output: a `Transaction` again (`read`) on which
/// `EntryEncoder` writes the same entry, byte for byte, as on the original — the HAR's decisions
/// stay in one place. What is kept is what the entry reads: the messages' start lines, header
/// fields (their storage and index, copied whole), sizes and flags; the timings; the cache
/// assessment; the URL as computed; the anomalies; tunnels and a WebSocket's messages. Bodies
/// are not in it (the web view keeps them apart, with `--bodies`) and are given back to `read`.
///
/// Why not the entry itself: encoding a HAR entry costs ~27,000 instructions a transaction
/// (escaping and redacting every header), writing these bytes a fraction of that, and most
/// entries of a run are never looked at. `TransactionArchiveTests` checks the round trip on every
/// corpus capture. A change to what `EntryEncoder` reads must be made here too: that test fails
/// otherwise.
///
/// The format is private to one process (no version, native layout of integers): it is read back
/// by the run that wrote it, from its own unlinked file. `read` checks every length and answers
/// nil on bytes it cannot take, never traps.
enum TransactionArchive {
    // MARK: Writing

    static func write(_ t: Transaction, to out: ByteBuffer) {
        let w = Writer(out: out)
        let c = t.connection
        w.u64(c.id)
        w.endpoint(c.client)
        w.endpoint(c.server)
        w.u64(c.deviceMAC)
        w.int(t.depth)
        w.string(t.scheme)
        w.optionalString(t.proxyTunnel?.kind.rawValue)
        if let via = t.proxyTunnel { w.string(via.target) }
        w.optionalU64(t.streamID)
        w.bool(t.pushed)
        w.string(t.url)
        w.weirds(t.weirds)
        let timings = t.timings
        w.double(timings.blocked); w.double(timings.dns); w.double(timings.connect); w.double(timings.ssl)
        w.double(timings.send); w.double(timings.wait); w.double(timings.receive)
        w.timestamp(timings.start)
        w.message(t.request)
        w.message(t.response)
        w.int(t.interimResponses.count)
        for m in t.interimResponses { w.message(m) }
        if let tunnel = t.tunnel {
            w.bool(true)
            w.u64(tunnel.bytesFromClient)
            w.u64(tunnel.bytesFromServer)
            w.optionalTimestamp(tunnel.start)
            w.optionalTimestamp(tunnel.end)
        } else { w.bool(false) }
        w.cache(t.cache)
        w.webSocket(t.webSocket)
    }

    private struct Writer {
        let out: ByteBuffer

        @inline(__always) func raw<T: BitwiseCopyable>(_ v: T) {
            let p = out.reserve(MemoryLayout<T>.size)
            UnsafeMutableRawPointer(p).storeBytes(of: v, as: T.self)
            out.commit(MemoryLayout<T>.size)
        }
        func u64(_ v: UInt64) { raw(v) }
        func int(_ v: Int) { raw(Int64(v)) }
        func bool(_ v: Bool) { out.append(v ? 1 : 0) }
        func double(_ v: Double) { raw(v.bitPattern) }
        func timestamp(_ v: Timestamp) { raw(v.nanoseconds) }
        func optionalTimestamp(_ v: Timestamp?) { bool(v != nil); if let v { timestamp(v) } }
        func optionalU64(_ v: UInt64?) { bool(v != nil); if let v { u64(v) } }
        func optionalDouble(_ v: Double?) { bool(v != nil); if let v { double(v) } }
        func bytes(_ b: UnsafeBufferPointer<UInt8>) {
            raw(UInt32(b.count))
            out.append(b)
        }
        func bytes(_ b: [UInt8]) { b.withUnsafeBufferPointer { bytes($0) } }
        func string(_ s: String) {
            var s = s
            s.withUTF8 { bytes($0) }
        }
        func optionalString(_ s: String?) { bool(s != nil); if let s { string(s) } }
        func endpoint(_ e: Endpoint) { raw(e.address.high); raw(e.address.low); raw(e.port) }
        func weirds(_ list: [Weird]) {
            raw(UInt16(clamping: list.count))
            for f in list.prefix(Int(UInt16.max)) { string(f.rawValue) }
        }

        func message(_ m: HTTPMessage?) {
            guard let m else { return bool(false) }
            bool(true)
            out.append(m.kind == .request ? 0 : 1)
            string(m.method)
            bytes(m.target)
            string(m.version)
            int(m.status)
            string(m.reason)
            bool(m.startLineParsed)
            bool(m.isHTTP09)
            headers(m.headers)
            int(m.headersSize)
            bool(m.headersComplete)
            optionalU64(m.body.contentLength)
            u64(m.body.bytes)
            u64(m.body.decodedBytes)
            bool(m.body.wasDecoded)
            bool(m.body.truncated)
            weirds(m.weirds)
        }

        func headers(_ h: HeaderFields) {
            bytes(h.storage)
            raw(UInt32(h.refs.count))
            // 17 bytes a field: its four offsets and lengths, then its name's id.
            let p = UnsafeMutableRawPointer(out.reserve(h.refs.count * 17))
            var i = 0
            for ref in h.refs {
                p.storeBytes(of: ref.nameStart, toByteOffset: i, as: UInt32.self)
                p.storeBytes(of: ref.nameCount, toByteOffset: i + 4, as: UInt32.self)
                p.storeBytes(of: ref.valueStart, toByteOffset: i + 8, as: UInt32.self)
                p.storeBytes(of: ref.valueCount, toByteOffset: i + 12, as: UInt32.self)
                p.storeBytes(of: ref.id.rawValue, toByteOffset: i + 16, as: UInt8.self)
                i += 17
            }
            out.commit(i)
        }

        func cache(_ c: CacheAssessment?) {
            guard let c else { return bool(false) }
            bool(true)
            bool(c.storable)
            optionalDouble(c.freshnessLifetime)
            string(c.lifetimeSource.rawValue)
            double(c.age)
            optionalDouble(c.freshFor)
            bool(c.mustRevalidate)
            bool(c.conditional)
            bool(c.notModified)
            bool(c.avoidable)
            optionalU64(c.avoidableBecauseOf)
            optionalTimestamp(c.expires)
            timestamp(c.responseTime)
            bool(c.noCache)
            bool(c.noStore)
            bool(c.dependsOnEvictedEntry)
        }

        func webSocket(_ ws: WebSocketLog?) {
            guard let ws else { return bool(false) }
            bool(true)
            optionalString(ws.extensions)
            optionalString(ws.subprotocol)
            for d in [ws.sent, ws.received] {
                int(d.messages); int(d.bytes); int(d.wireBytes); int(d.pings); int(d.pongs)
            }
            int(ws.dropped)
            bool(ws.closeCode != nil); if let code = ws.closeCode { raw(code) }
            optionalString(ws.closeReason)
            bool(ws.closedByClient != nil); if let by = ws.closedByClient { bool(by) }
            int(ws.messages.count)
            for m in ws.messages {
                bool(m.fromClient)
                timestamp(m.time)
                out.append(m.opcode)
                int(m.size)
                int(m.wireSize)
                bool(m.compressed)
                bool(m.data != nil); if let data = m.data { bytes(data) }
                bool(m.truncated)
                optionalString(m.problem?.rawValue)
            }
        }
    }

    // MARK: Reading

    /// The transaction `bytes` hold, with the kept bodies given back; nil when the bytes are not
    /// a whole archive.
    static func read(_ bytes: UnsafeRawBufferPointer, requestBody: [UInt8]? = nil, responseBody: [UInt8]? = nil) -> Transaction? {
        var r = Reader(data: bytes)
        guard let t = r.transaction(), r.offset == bytes.count else { return nil }
        if let requestBody { t.request?.body.kept = requestBody }
        if let responseBody { t.response?.body.kept = responseBody }
        return t
    }

    private struct Failed: Error {}

    private struct Reader {
        let data: UnsafeRawBufferPointer
        var offset = 0

        mutating func raw<T: BitwiseCopyable>(_: T.Type = T.self) throws -> T {
            let n = MemoryLayout<T>.size
            guard offset + n <= data.count, let base = data.baseAddress else { throw Failed() }
            defer { offset += n }
            return base.loadUnaligned(fromByteOffset: offset, as: T.self)
        }
        mutating func u64() throws -> UInt64 { try raw() }
        mutating func int() throws -> Int { Int(truncatingIfNeeded: try raw(Int64.self)) }
        mutating func byte() throws -> UInt8 { try raw() }
        mutating func bool() throws -> Bool { try byte() != 0 }
        mutating func double() throws -> Double { Double(bitPattern: try raw()) }
        mutating func timestamp() throws -> Timestamp { Timestamp(nanoseconds: try raw()) }
        mutating func optionalTimestamp() throws -> Timestamp? { try bool() ? try timestamp() : nil }
        mutating func optionalU64() throws -> UInt64? { try bool() ? try u64() : nil }
        mutating func optionalDouble() throws -> Double? { try bool() ? try double() : nil }
        mutating func bytes() throws -> UnsafeRawBufferPointer {
            let n = Int(try raw(UInt32.self))
            guard offset + n <= data.count else { throw Failed() }
            defer { offset += n }
            return UnsafeRawBufferPointer(rebasing: data[offset..<offset + n])
        }
        mutating func array() throws -> [UInt8] { Array(try bytes()) }
        mutating func string() throws -> String { String(decoding: try bytes(), as: UTF8.self) }
        mutating func optionalString() throws -> String? { try bool() ? try string() : nil }
        mutating func endpoint() throws -> Endpoint {
            let high: UInt64 = try raw(), low: UInt64 = try raw()
            return Endpoint(address: IPAddress(high: high, low: low), port: try raw())
        }
        mutating func weirds() throws -> [Weird] {
            let n = Int(try raw(UInt16.self))
            var list: [Weird] = []
            for _ in 0..<n {
                guard let f = Weird(rawValue: try string()) else { throw Failed() }
                list.append(f)
            }
            return list
        }

        mutating func transaction() -> Transaction? {
            try? readTransaction()
        }

        private mutating func readTransaction() throws -> Transaction {
            let id = try u64()
            let client = try endpoint(), server = try endpoint()
            let device = try u64()
            let depth = try int()
            let scheme = try string()
            var via: ProxyTunnel? = nil
            if let kind = try optionalString() {
                guard let k = ProxyTunnel.Kind(rawValue: kind) else { throw Failed() }
                via = ProxyTunnel(kind: k, target: try string())
            }
            var snapshot = ConnectionSnapshot(archived: id, client: client, server: server)
            snapshot.deviceMAC = device
            let t = Transaction(connection: snapshot, depth: depth, scheme: scheme, tunnel: via)
            t.streamID = try optionalU64()
            t.pushed = try bool()
            let url = try string()
            t.weirds = try weirds()
            var timings = TransactionTimings()
            timings.blocked = try double(); timings.dns = try double(); timings.connect = try double()
            timings.ssl = try double(); timings.send = try double(); timings.wait = try double()
            timings.receive = try double()
            timings.start = try timestamp()
            t.timings = timings
            t.request = try message()
            t.response = try message()
            let interim = try int()
            guard interim >= 0 && interim <= data.count else { throw Failed() }
            for _ in 0..<interim { if let m = try message() { t.interimResponses.append(m) } }
            if try bool() {
                var tunnel = TunnelSummary()
                tunnel.bytesFromClient = try u64()
                tunnel.bytesFromServer = try u64()
                tunnel.start = try optionalTimestamp()
                tunnel.end = try optionalTimestamp()
                t.tunnel = tunnel
            }
            t.cache = try cache()
            t.webSocket = try webSocket()
            t.cachedURL = url   // after the WebSocket, whose setting forgets a computed URL
            return t
        }

        mutating func message() throws -> HTTPMessage? {
            guard try bool() else { return nil }
            let m = HTTPMessage(kind: try byte() == 0 ? .request : .response)
            m.method = try string()
            m.target = try array()
            m.version = try string()
            m.status = try int()
            m.reason = try string()
            m.startLineParsed = try bool()
            m.isHTTP09 = try bool()
            m.headers = try headers()
            m.headersSize = try int()
            m.headersComplete = try bool()
            m.body.contentLength = try optionalU64()
            m.body.bytes = try u64()
            m.body.decodedBytes = try u64()
            m.body.archivedWasDecoded = try bool()
            m.body.truncated = try bool()
            m.weirds = try weirds()
            m.ended = true
            return m
        }

        mutating func headers() throws -> HeaderFields {
            var h = HeaderFields()
            h.storage = try array()
            let n = Int(try raw(UInt32.self))
            guard n <= (data.count - offset) / 17 else { throw Failed() }
            h.refs.reserveCapacity(n)
            for _ in 0..<n {
                let nameStart: UInt32 = try raw(), nameCount: UInt32 = try raw()
                let valueStart: UInt32 = try raw(), valueCount: UInt32 = try raw()
                // An index that points outside its storage, or a field id this build does not
                // have, is not an archive this process wrote.
                guard let id = FieldName(rawValue: try byte()),
                      Int(nameStart) + Int(nameCount) <= h.storage.count,
                      Int(valueStart) + Int(valueCount) <= h.storage.count else { throw Failed() }
                h.refs.append(.init(nameStart: nameStart, nameCount: nameCount, valueStart: valueStart, valueCount: valueCount, id: id))
            }
            return h
        }

        mutating func cache() throws -> CacheAssessment? {
            guard try bool() else { return nil }
            var c = CacheAssessment()
            c.storable = try bool()
            c.freshnessLifetime = try optionalDouble()
            guard let source = LifetimeSource(rawValue: try string()) else { throw Failed() }
            c.lifetimeSource = source
            c.age = try double()
            c.freshFor = try optionalDouble()
            c.mustRevalidate = try bool()
            c.conditional = try bool()
            c.notModified = try bool()
            c.avoidable = try bool()
            c.avoidableBecauseOf = try optionalU64()
            c.expires = try optionalTimestamp()
            c.responseTime = try timestamp()
            c.noCache = try bool()
            c.noStore = try bool()
            c.dependsOnEvictedEntry = try bool()
            return c
        }

        mutating func webSocket() throws -> WebSocketLog? {
            guard try bool() else { return nil }
            let ws = WebSocketLog()
            ws.extensions = try optionalString()
            ws.subprotocol = try optionalString()
            var directions: [WebSocketLog.Direction] = []
            for _ in 0..<2 {
                var d = WebSocketLog.Direction()
                d.messages = try int(); d.bytes = try int(); d.wireBytes = try int(); d.pings = try int(); d.pongs = try int()
                directions.append(d)
            }
            ws.sent = directions[0]
            ws.received = directions[1]
            ws.dropped = try int()
            ws.closeCode = try bool() ? try raw(UInt16.self) : nil
            ws.closeReason = try optionalString()
            ws.closedByClient = try bool() ? try bool() : nil
            let n = try int()
            guard n >= 0 && n <= data.count else { throw Failed() }
            for _ in 0..<n {
                let fromClient = try bool()
                let time = try timestamp()
                let opcode = try byte()
                let size = try int(), wireSize = try int()
                let compressed = try bool()
                let data = try bool() ? try array() : nil
                let truncated = try bool()
                var problem: WebSocketLog.Message.Problem? = nil
                if let p = try optionalString() {
                    guard let known = WebSocketLog.Message.Problem(rawValue: p) else { throw Failed() }
                    problem = known
                }
                ws.messages.append(.init(fromClient: fromClient, time: time, opcode: opcode, size: size, wireSize: wireSize,
                                         compressed: compressed, data: data, truncated: truncated, problem: problem))
            }
            return ws
        }
    }
}
