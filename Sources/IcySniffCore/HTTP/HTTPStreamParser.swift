#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Limits and choices of the HTTP parser (a value type, like NIO's decoder limits).
public struct HTTPParserOptions: Sendable {
    /// Keep decoded bodies in memory (for `--bodies`), up to `maxBodyBytes` each.
    public var keepBodies = false
    public var maxBodyBytes = 16 << 20
    /// Size cap of a start line plus header section; the rest of an oversized head is skipped.
    public var maxHeaderBytes = 1 << 20
    public var maxHeaderFields = 1000
    /// Decoding stops here (a decompression bomb); the size is then flagged as a lower bound.
    public var maxDecodedBytes: UInt64 = 1 << 30
    public init() {}
}

/// Receives the messages of one direction as the parser finds them. Call order per message:
/// `parserBegan`, then `parserCompletedHead` (unless the head was cut short), then `parserEnded`.
public protocol HTTPParserDelegate: AnyObject {
    func parserBegan(_ message: HTTPMessage)
    func parserCompletedHead(_ message: HTTPMessage)
    func parserEnded(_ message: HTTPMessage)
    /// Asked by the response parser: does the request being answered expect an HTTP/0.9 reply?
    func parserExpectsHTTP09Response() -> Bool
    /// Data that is not HTTP where a message should start (counted, then skipped).
    func parserSkipped(_ weird: Weird, bytes: Int)
}

/// An incremental HTTP/1.x parser for one direction of a connection (requests or responses).
///
/// Input: in-order stream bytes (`parse`), gaps of known length (`gap`) and the end of the
/// direction (`finish`), split anywhere. Output: `HTTPMessage`s through the delegate. Only the
/// bytes of a message head are copied (into a reused buffer); bodies are counted, decoded and kept
/// only when asked. Framing follows RFC 9112 §6; every deviation is a named `Weird`.
public final class HTTPStreamParser {
    enum State {
        case start
        case head
        case body(remaining: UInt64)
        case chunkSize
        case chunkData(remaining: UInt64)
        case chunkDataEnd(sawCR: Bool)
        case trailers
        case untilClose
        case tunnel
        case resync
    }

    public let role: HTTPMessage.Kind
    var state: State = .start
    private var buffer: [UInt8] = []
    private var lineStart = 0
    private var headOffset: UInt64 = 0
    private var headTime: Timestamp = .zero
    private var lastTime: Timestamp = .zero
    private(set) var message: HTTPMessage? = nil
    public private(set) var tunnelBytes: UInt64 = 0
    public private(set) var tunnelStart: Timestamp? = nil
    public private(set) var tunnelEnd: Timestamp? = nil
    let options: HTTPParserOptions
    unowned(unsafe) let delegate: any HTTPParserDelegate

    public init(role: HTTPMessage.Kind, options: HTTPParserOptions, delegate: any HTTPParserDelegate) {
        self.role = role
        self.options = options
        self.delegate = delegate
    }

    public var isTunnel: Bool { if case .tunnel = state { return true }; return false }

    /// Switches the rest of the direction to an opaque tunnel (CONNECT 2xx, 101 Switching Protocols).
    public func enterTunnel() {
        state = .tunnel
    }

    // MARK: - Input

    public func parse(_ chunk: StreamChunk) {
        let bytes = chunk.bytes
        let n = bytes.count
        let ts = chunk.timestamp
        lastTime = ts
        var i = 0
        while i < n {
            switch state {
            case .start:
                let c = bytes[i]
                if c == 0x0D || c == 0x0A { i += 1; continue }
                headOffset = chunk.offset + UInt64(i)
                headTime = ts
                buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
                lineStart = 0
                state = .head
            case .head:
                i = consumeHead(bytes, from: i, at: ts)
            case .body(let remaining):
                let take = Int(min(UInt64(n - i), remaining))
                bodyData(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]), wire: take)
                i += take
                if remaining == UInt64(take) { endMessage(at: ts, complete: true) } else { state = .body(remaining: remaining - UInt64(take)) }
            case .chunkSize:
                i = consumeChunkSizeLine(bytes, from: i, at: ts)
            case .chunkData(let remaining):
                let take = Int(min(UInt64(n - i), remaining))
                bodyData(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]), wire: take)
                i += take
                state = remaining == UInt64(take) ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - UInt64(take))
            case .chunkDataEnd(let sawCR):
                let c = bytes[i]
                if c == 0x0D && !sawCR {
                    message?.bodyWireBytes += 1
                    i += 1
                    state = .chunkDataEnd(sawCR: true)
                } else if c == 0x0A {
                    message?.bodyWireBytes += 1
                    i += 1
                    state = .chunkSize
                } else {
                    message?.note(.missingChunkTerminator)
                    state = .chunkSize
                }
            case .trailers:
                i = consumeTrailers(bytes, from: i, at: ts)
            case .untilClose:
                bodyData(UnsafeRawBufferPointer(rebasing: bytes[i..<n]), wire: n - i)
                message?.lastByte = ts
                i = n
            case .tunnel:
                if tunnelStart == nil { tunnelStart = ts }
                tunnelEnd = ts
                tunnelBytes &+= UInt64(n - i)
                i = n
            case .resync:
                i = consumeResync(bytes, from: i, offset: chunk.offset, at: ts)
            }
        }
    }

    /// Bytes that were never captured.
    public func gap(_ gap: StreamGap) {
        lastTime = gap.timestamp
        switch state {
        case .body(let remaining):
            let inBody = min(gap.length, remaining)
            bodyGap(inBody)
            if inBody == remaining {
                endMessage(at: gap.timestamp, complete: true)
                if gap.length > inBody { state = .resync; buffer.removeAll(keepingCapacity: true) }
            } else {
                state = .body(remaining: remaining - inBody)
            }
        case .chunkData(let remaining) where gap.length <= remaining:
            bodyGap(gap.length)
            state = gap.length == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - gap.length)
        case .untilClose:
            bodyGap(gap.length)
        case .tunnel:
            tunnelBytes &+= gap.length
        case .start, .resync:
            state = .resync
            buffer.removeAll(keepingCapacity: true)
        case .head:
            interruptHead(at: gap.timestamp, weird: .headerGap)
            state = .resync
            buffer.removeAll(keepingCapacity: true)
        case .chunkData, .chunkSize, .chunkDataEnd, .trailers:
            if case .chunkData(let remaining) = state { bodyGap(remaining) }
            message?.note(.headerGap)
            endMessage(at: gap.timestamp, complete: false)
            state = .resync
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// The direction ended (FIN, RST, end of capture).
    public func finish(at timestamp: Timestamp, reason: CloseReason) {
        switch state {
        case .untilClose:
            // A close-delimited body is complete when the connection closes (RFC 9112 §6.3 item 8).
            endMessage(at: message?.lastByte ?? lastTime, complete: true)
        case .head:
            interruptHead(at: lastTime, weird: .interruptedByClose)
        case .body, .chunkSize, .chunkData, .chunkDataEnd, .trailers:
            message?.note(.interruptedByClose)
            endMessage(at: lastTime, complete: false)
        case .tunnel, .start, .resync:
            break
        }
        if case .tunnel = state {} else { state = .start }
    }

    // MARK: - Head

    /// Accumulates head bytes line by line until the empty line that ends the header section.
    private func consumeHead(_ bytes: UnsafeRawBufferPointer, from start: Int, at ts: Timestamp) -> Int {
        var i = start
        let n = bytes.count
        // Lines are found in the chunk and copied into `buffer` in one run, when the start line or
        // the whole head is to be read, or at the end of the chunk: `bytes[pending..<i]` belongs
        // to the head but is not in `buffer` yet, so the head so far is `buffer.count + i - pending`
        // bytes long.
        var pending = start
        @inline(__always) func flush() {
            if i > pending { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[pending..<i])) }
            pending = i
        }
        while i < n {
            let base = bytes.baseAddress! + i
            guard let found = memchr(base, 0x0A, n - i) else {
                i = n
                flush()
                checkHeadSize(at: ts)
                return n
            }
            let lf = i + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
            i = lf + 1
            var headCount = buffer.count + (i - pending)
            if headCount > options.maxHeaderBytes {
                flush()
                checkHeadSize(at: ts)
                if case .head = state {} else { return i }
                headCount = buffer.count
            }
            let lineEnd = headCount - 1           // index of LF in the head
            var contentEnd = lineEnd
            // The byte before the LF: in the chunk, or at the end of `buffer` (a line cut between chunks).
            if contentEnd > lineStart && (lf > pending ? bytes[lf - 1] : buffer[contentEnd - 1]) == 0x0D { contentEnd -= 1 }
            else { message?.note(.bareLFLineEnding) }
            if lineStart == 0 {
                // The start line decides what this is.
                flush()
                if !startLine(buffer[0..<contentEnd], at: ts) { return i }
                if let m = message, m.kind == .request, m.isHTTP09 {
                    if i < n {
                        // More lines follow at once: a 1.x request whose version is missing, with
                        // header fields (an HTTP/0.9 client sends the one line and waits).
                        m.isHTTP09 = false
                        m.note(.badRequestLine)
                        m.weirds.removeAll { $0 == .http09 }
                    } else {
                        m.headersSize = buffer.count
                        completeHead(at: ts)
                        return i
                    }
                }
                if let m = message, m.isHTTP09 {   // HTTP/0.9 reply: this line is already body
                    return i
                }
            } else if contentEnd == lineStart {
                flush()
                completeHead(at: ts)
                return i
            }
            lineStart = headCount
        }
        flush()
        return i
    }

    private func checkHeadSize(at ts: Timestamp) {
        guard buffer.count > options.maxHeaderBytes else { return }
        if message == nil {
            // No start line within the limit: not HTTP.
            delegate.parserSkipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
            buffer.removeAll(keepingCapacity: false)
            lineStart = 0
            state = .resync
            return
        }
        message?.note(.headerTooLarge)
        // Drop the partial line; keep the complete lines for the header fields.
        buffer.removeSubrange(lineStart...)
        interruptHead(at: ts, weird: .headerTooLarge)
        state = .resync
    }

    /// Validates the first line. Returns false when the parser left the head state.
    private func startLine(_ line: ArraySlice<UInt8>, at ts: Timestamp) -> Bool {
        switch role {
        case .request:
            guard let parsed = RequestLine(line) else {
                delegate.parserSkipped(.unexpectedClientData, bytes: buffer.count)
                buffer.removeAll(keepingCapacity: true)
                lineStart = 0
                state = .resync
                return false
            }
            let m = begin()
            m.method = parsed.method
            m.target = parsed.target
            m.version = parsed.version
            m.isHTTP09 = parsed.version.isEmpty
            m.startLineParsed = true
            if parsed.malformed { m.note(.badRequestLine) }
            if m.isHTTP09 { m.note(.http09) }
            return true
        case .response:
            if let parsed = StatusLine(line) {
                let m = begin()
                m.version = parsed.version
                m.status = parsed.status
                m.reason = parsed.reason
                m.startLineParsed = true
                return true
            }
            if delegate.parserExpectsHTTP09Response() {
                // HTTP/0.9: no status line, the whole rest of the stream is the body.
                let m = begin()
                m.isHTTP09 = true
                m.startLineParsed = true
                m.headersComplete = true
                m.headersEnd = headTime
                m.closeDelimited = true
                m.note(.http09)
                delegate.parserCompletedHead(m)
                state = .untilClose
                let held = buffer
                buffer.removeAll(keepingCapacity: true)
                held.withUnsafeBytes { bodyData($0, wire: $0.count) }
                m.lastByte = ts
                return true
            }
            delegate.parserSkipped(.unexpectedServerData, bytes: buffer.count)
            buffer.removeAll(keepingCapacity: true)
            lineStart = 0
            state = .resync
            return false
        }
    }

    private func begin() -> HTTPMessage {
        let m = HTTPMessage(kind: role)
        m.startOffset = headOffset
        m.firstByte = headTime
        m.lastByte = headTime
        message = m
        delegate.parserBegan(m)
        return m
    }

    /// Parses the header lines held in the buffer into the message: the message gets an exact-size
    /// copy of the head, and each field is a name range and a value range of it.
    private func parseHeaderFields(into m: HTTPMessage, trailers: Bool = false) {
        var fields = buffer.withUnsafeBufferPointer { HeaderFields(head: $0) }
        let maxFields = options.maxHeaderFields
        var notes: [Weird] = []
        buffer.withUnsafeBufferPointer { p in
            let count = p.count
            var i = 0
            var first = !trailers
            @inline(__always) func trimmed(_ lo: Int, _ hi: Int) -> Range<Int> { trimmingOWS(p, lo, hi) }
            while i < count {
                var end = i
                if let base = p.baseAddress, let found = memchr(base + i, 0x0A, count - i) {
                    end = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                } else {
                    end = count
                }
                var contentEnd = end
                if contentEnd > i && p[contentEnd - 1] == 0x0D { contentEnd -= 1 }
                let lineStart = i
                i = end + 1
                if first { first = false; continue }
                if contentEnd == lineStart { break }
                if isOWS(p[lineStart]) {
                    // obs-fold (RFC 9112 §5.2): the line continues the previous field's value.
                    notes.append(.obsoleteLineFolding)
                    fields.continueLast(with: buffer[trimmed(lineStart, contentEnd)])
                    continue
                }
                var colon = lineStart
                while colon < contentEnd && p[colon] != 0x3A { colon += 1 }
                guard colon < contentEnd else {
                    notes.append(.badHeaderLine)
                    continue
                }
                // Whitespace before the colon is a bad line (RFC 9112 §5.1), tolerated.
                let name = trimmed(lineStart, colon)
                if name.upperBound < colon { notes.append(.badHeaderLine) }
                if name.isEmpty { notes.append(.badHeaderLine); continue }
                if fields.count >= maxFields { notes.append(.tooManyHeaders); break }
                let id = FieldName(buffer: UnsafeBufferPointer(rebasing: p[name]))
                fields.appendRange(name: name, value: trimmed(colon + 1, contentEnd), id: id)
            }
        }
        for w in notes { m.note(w) }
        if trailers { m.trailers = fields } else { m.headers = fields }
    }

    /// The header section ended: decide the body framing (RFC 9112 §6.3).
    private func completeHead(at ts: Timestamp) {
        guard let m = message else { state = .start; return }
        if !m.isHTTP09 { parseHeaderFields(into: m) }
        m.headersSize = buffer.count
        m.headersComplete = true
        m.headersEnd = ts
        m.lastByte = ts
        buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
        lineStart = 0
        delegate.parserCompletedHead(m)
        if message !== m { return }   // the delegate ended it
        let framing = BodyFraming.decide(for: m)
        for w in framing.weirds { m.note(w) }
        m.chunked = framing.kind == .chunked
        m.contentLength = framing.length
        setUpDecoder(m)
        switch framing.kind {
        case .none:
            endMessage(at: ts, complete: true)
        case .length:
            if framing.length == 0 { endMessage(at: ts, complete: true) } else { state = .body(remaining: framing.length ?? 0) }
        case .chunked:
            state = .chunkSize
        case .untilClose:
            m.closeDelimited = true
            state = .untilClose
        case .tunnel:
            endMessage(at: ts, complete: true)
            state = .tunnel
        }
    }

    /// A head cut short (gap, close, size limit): keep what was complete and end the message.
    private func interruptHead(at ts: Timestamp, weird: Weird) {
        if message == nil, !buffer.isEmpty {
            // The start line itself may be all there is.
            var end = buffer.firstIndex(of: 0x0A) ?? buffer.count
            if end > 0 && buffer[end - 1] == 0x0D { end -= 1 }
            if end > 0 {
                let line = buffer[0..<end]
                if role == .request, let parsed = RequestLine(line) {
                    let m = begin()
                    m.method = parsed.method; m.target = parsed.target; m.version = parsed.version
                    m.startLineParsed = true
                } else if role == .response, let parsed = StatusLine(line) {
                    let m = begin()
                    m.version = parsed.version; m.status = parsed.status; m.reason = parsed.reason
                    m.startLineParsed = true
                }
            }
        }
        if message == nil, role == .response, !buffer.isEmpty, delegate.parserExpectsHTTP09Response() {
            // An HTTP/0.9 reply shorter than one line.
            let m = begin()
            m.isHTTP09 = true
            m.startLineParsed = true
            m.headersComplete = true
            m.closeDelimited = true
            m.note(.http09)
            delegate.parserCompletedHead(m)
            let held = buffer
            buffer.removeAll(keepingCapacity: true)
            held.withUnsafeBytes { bodyData($0, wire: $0.count) }
            lineStart = 0
            endMessage(at: ts, complete: true)
            return
        }
        guard let m = message else {
            if !buffer.isEmpty {
                delegate.parserSkipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
            }
            buffer.removeAll(keepingCapacity: true)
            lineStart = 0
            return
        }
        if lineStart > 0 { buffer.removeSubrange(lineStart...) }
        parseHeaderFields(into: m)
        m.headersSize = buffer.count
        m.note(weird)
        buffer.removeAll(keepingCapacity: true)
        lineStart = 0
        endMessage(at: ts, complete: false)
    }

    // MARK: - Chunked bodies (RFC 9112 §7.1)

    private func consumeChunkSizeLine(_ bytes: UnsafeRawBufferPointer, from start: Int, at ts: Timestamp) -> Int {
        let n = bytes.count
        let base = bytes.baseAddress! + start
        guard let found = memchr(base, 0x0A, n - start) else {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<n]))
            if buffer.count > 4096 { chunkFramingError(.badChunkSize, at: ts) }
            return n
        }
        let lf = start + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...lf]))
        let lineLength = buffer.count
        message?.bodyWireBytes += UInt64(lineLength)
        // Hex digits, then optional whitespace and ;extensions.
        var size: UInt64 = 0
        var digits = 0
        var overflow = false
        var j = 0
        while j < buffer.count && (buffer[j] == 0x20 || buffer[j] == 0x09) { j += 1 }
        while j < buffer.count, let v = hexValue(buffer[j]) {
            if size > (UInt64.max >> 4) { overflow = true }
            size = size &<< 4 | UInt64(v)
            digits += 1
            j += 1
        }
        buffer.removeAll(keepingCapacity: true)
        if digits == 0 {
            if lineLength <= 2 { return lf + 1 }   // a stray empty line between chunks: tolerated
            chunkFramingError(.badChunkSize, at: ts)
            return lf + 1
        }
        if overflow {
            chunkFramingError(.chunkSizeOverflow, at: ts)
            return lf + 1
        }
        if size == 0 {
            state = .trailers
            lineStart = 0
        } else {
            state = .chunkData(remaining: size)
        }
        return lf + 1
    }

    private func chunkFramingError(_ weird: Weird, at ts: Timestamp) {
        message?.note(weird)
        message?.note(.smugglingSuspected)
        buffer.removeAll(keepingCapacity: true)
        endMessage(at: ts, complete: false)
        state = .start
    }

    @inline(__always) private func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    private func consumeTrailers(_ bytes: UnsafeRawBufferPointer, from start: Int, at ts: Timestamp) -> Int {
        var i = start
        let n = bytes.count
        while i < n {
            let base = bytes.baseAddress! + i
            guard let found = memchr(base, 0x0A, n - i) else {
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<n]))
                message?.bodyWireBytes += UInt64(n - i)
                if buffer.count > options.maxHeaderBytes { chunkFramingError(.headerTooLarge, at: ts) }
                return n
            }
            let lf = i + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i...lf]))
            message?.bodyWireBytes += UInt64(lf + 1 - i)
            i = lf + 1
            var contentEnd = buffer.count - 1
            if contentEnd > lineStart && buffer[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            if contentEnd == lineStart {
                if let m = message, lineStart > 0 {
                    buffer.removeSubrange(lineStart...)
                    parseHeaderFields(into: m, trailers: true)
                }
                buffer.removeAll(keepingCapacity: true)
                lineStart = 0
                endMessage(at: ts, complete: true)
                return i
            }
            lineStart = buffer.count
        }
        return i
    }

    // MARK: - Resynchronisation

    /// After garbage or a gap: skip line by line until a plausible start line.
    private func consumeResync(_ bytes: UnsafeRawBufferPointer, from start: Int, offset: UInt64, at ts: Timestamp) -> Int {
        var i = start
        let n = bytes.count
        while i < n {
            let base = bytes.baseAddress! + i
            guard let found = memchr(base, 0x0A, n - i) else {
                if buffer.count < 8192 {
                    buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<min(n, i + 8192)]))
                }
                delegate.parserSkipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: n - i)
                return n
            }
            let lf = i + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
            let lineStartInChunk = i
            if buffer.count < 8192 { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i...lf])) }
            i = lf + 1
            var end = buffer.count - 1
            if end > 0 && buffer[end - 1] == 0x0D { end -= 1 }
            let line = buffer[0..<end]
            let plausible = role == .request ? RequestLine.isPlausible(line) : StatusLine(line) != nil
            if plausible {
                // Restart a head with this line (its start may have been in an earlier chunk).
                let held = buffer
                buffer.removeAll(keepingCapacity: true)
                headOffset = offset + UInt64(lineStartInChunk)
                headTime = ts
                lineStart = 0
                state = .head
                _ = held.withUnsafeBytes { consumeHead($0, from: 0, at: ts) }
                return i
            }
            delegate.parserSkipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
            buffer.removeAll(keepingCapacity: true)
        }
        return i
    }

    // MARK: - Bodies

    private func setUpDecoder(_ m: HTTPMessage) {
        guard let first = m.headers.index(of: .contentEncoding) else { return }
        let tokens: [String]
        // The usual case, one `Content-Encoding: gzip` line, without splitting Strings.
        if m.headers.count(of: .contentEncoding) == 1,
           m.headers.withValueBytes(at: first, { equalsBytes($0, "gzip") }) {
            tokens = ["gzip"]
        } else {
            guard let encoding = m.headers.combined(.contentEncoding) else { return }
            tokens = encoding.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        }
        m.contentEncodings = tokens
        do {
            m.decoder = try ContentDecoder(encodings: tokens, maxOutput: options.maxDecodedBytes,
                                           keepsOutput: options.keepBodies)
        } catch {
            m.note(.unsupportedContentEncoding)
        }
    }

    @inline(__always)
    private func bodyData(_ data: UnsafeRawBufferPointer, wire: Int) {
        guard let m = message, data.count > 0 else { return }
        m.bodyBytes &+= UInt64(data.count)
        m.bodyWireBytes &+= UInt64(wire)
        if let decoder = m.decoder, !m.decodeFailed {
            let keep = options.keepBodies
            let cap = options.maxBodyBytes
            let ok = decoder.feed(data) { out in
                if keep { Self.keep(out, in: m, cap: cap) }
            }
            decoderStatus(decoder, ok: ok, m)
        } else {
            m.decodedBytes &+= UInt64(data.count)
            if options.keepBodies && (m.decoder == nil) { Self.keep(data, in: m, cap: options.maxBodyBytes) }
        }
    }

    private func finishDecoding(_ m: HTTPMessage) {
        guard let decoder = m.decoder, !m.decodeFailed else { return }
        let keep = options.keepBodies
        let cap = options.maxBodyBytes
        let ok = decoder.finish { out in
            if keep { Self.keep(out, in: m, cap: cap) }
        }
        decoderStatus(decoder, ok: ok, m)
    }

    @inline(__always)
    private func decoderStatus(_ decoder: ContentDecoder, ok: Bool, _ m: HTTPMessage) {
        m.decodedBytes = decoder.decodedCount
        if decoder.capped && !m.decodeCapped { m.decodeCapped = true; m.note(.bodyDecodeCapped) }
        if !ok { m.decodeFailed = true; m.note(.bodyDecodeFailed) }
    }

    private static func keep(_ data: UnsafeRawBufferPointer, in m: HTTPMessage, cap: Int) {
        if m.body == nil { m.body = [] }
        let room = cap - m.body!.count
        if room <= 0 { if !m.bodyTruncated { m.bodyTruncated = true; m.note(.bodyTruncatedInMemory) }; return }
        if data.count > room {
            m.body!.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[0..<room]))
            m.bodyTruncated = true
            m.note(.bodyTruncatedInMemory)
        } else {
            m.body!.append(contentsOf: data)
        }
    }

    private func bodyGap(_ length: UInt64) {
        guard let m = message, length > 0 else { return }
        m.bodyBytes &+= length
        m.bodyWireBytes &+= length
        m.bodyGapBytes &+= length
        m.note(.bodyGap)
        if m.decoder != nil && !m.decodeFailed {
            // A decoder cannot continue past missing bytes.
            m.decodeFailed = true
        }
    }

    private func endMessage(at ts: Timestamp, complete: Bool) {
        guard let m = message else { state = .start; return }
        if case .tunnel = state {} else { state = .start }
        m.lastByte = max(m.lastByte, ts)
        m.complete = complete
        m.ended = true
        finishDecoding(m)
        if m.decodeFailed || m.decoder == nil {
            m.decodedBytes = m.bodyBytes
        }
        if !complete { m.note(m.kind == .request ? .requestIncomplete : .responseIncomplete) }
        message = nil
        delegate.parserEnded(m)
    }
}

extension Substring {
    func trimmingASCIIWhitespace() -> String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
