#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The start line and the header section (RFC 9112 §3, §4, §5), and the framing decision.
extension HTTPStreamParser {
    /// Accumulates head bytes line by line until the empty line that ends the header section.
    func consumeHead(_ bytes: UnsafeRawBufferPointer, from start: Int, at ts: Timestamp) -> Int {
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
                    // An HTTP/0.9 client sends the one line and waits; an HTTP/1.x client whose
                    // version is missing goes on with header lines. What comes next decides,
                    // whichever chunk it comes in (see `State.http09Candidate`).
                    m.headersSize = buffer.count
                    http09LineEnd = ts
                    transition(to: .http09Candidate)
                    return i
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

    func checkHeadSize(at ts: Timestamp) {
        guard buffer.count > options.maxHeaderBytes else { return }
        if message == nil {
            // No start line within the limit: not HTTP.
            skipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
            buffer.removeAll(keepingCapacity: false)
            lineStart = 0
            transition(to: .resync)
            return
        }
        message?.note(.headerTooLarge)
        // Drop the partial line; keep the complete lines for the header fields.
        buffer.removeSubrange(lineStart...)
        interruptHead(at: ts, weird: .headerTooLarge)
        transition(to: .resync)
    }

    /// Validates the first line. Returns false when the parser left the head state.
    func startLine(_ line: ArraySlice<UInt8>, at ts: Timestamp) -> Bool {
        switch role {
        case .request:
            guard var parsed = RequestLine(line) else {
                skipped(.unexpectedClientData, bytes: buffer.count)
                buffer.removeAll(keepingCapacity: true)
                lineStart = 0
                transition(to: .resync)
                return false
            }
            if unframedBodyMayFollow {
                // The body of an unframeable request runs into this line: its method is a known
                // one behind bytes that are no method (`abcGET`); those bytes are skipped.
                unframedBodyMayFollow = false
                if !HTTPMethods.known.contains(parsed.method), let known = HTTPMethods.known.first(where: { parsed.method.hasSuffix($0) }) {
                    skipped(.unexpectedClientData, bytes: parsed.method.utf8.count - known.utf8.count)
                    parsed.method = known
                }
            }
            _ = begin { m in
                m.method = parsed.method
                m.target = parsed.target
                m.version = parsed.version
                m.isHTTP09 = parsed.version.isEmpty
                m.startLineParsed = true
                if parsed.malformed { m.note(.badRequestLine) }
                if parsed.spaceInTarget { m.note(.spaceInRequestTarget) }
                if m.isHTTP09 { m.note(.http09) }
            }
            return true
        case .response:
            let context = requestBeingAnswered()
            if let parsed = StatusLine(line) {
                _ = begin(answering: context) { m in
                    m.version = parsed.version
                    m.status = parsed.status
                    m.reason = parsed.reason
                    m.startLineParsed = true
                }
                return true
            }
            // HTTP/0.9: no status line, the whole rest of the stream is the body.
            if let form = replyForm(context, line) {
                let m = beginHTTP09Reply(headersEnd: headTime, answering: context)
                if form == .statusLineMissing { m.note(.statusLineMissing) }
                transition(to: .untilClose)
                bodyFromBuffer()
                m.arrival.lastByte = ts
                return true
            }
            // A line that means to be a status line but is not one is named as such.
            let looksLikeStatus = line.count >= 5 && line.starts(with: "HTTP/".utf8)
            skipped(looksLikeStatus ? .badStatusLine : .unexpectedServerData, bytes: buffer.count)
            buffer.removeAll(keepingCapacity: true)
            lineStart = 0
            transition(to: .resync)
            return false
        }
    }

    enum ReplyForm { case http09, statusLineMissing }

    /// Whether server bytes starting with `first`, which are no status line, are a reply in
    /// HTTP/0.9's form: to an HTTP/0.9 request; or to an HTTP/1.x request first on a connection
    /// seen whole, before anything else came, in text that is no other protocol's greeting (an
    /// SSH banner, an SMTP code, a TLS alert) (`statusLineMissing`). Nil: not a reply.
    func replyForm(_ context: RequestContext, _ first: ArraySlice<UInt8>) -> ReplyForm? {
        if context.isHTTP09 { return .http09 }
        guard context.replyMayLackStatusLine, messagesBegun == 0, skippedSinceLastMessage == 0,
              !first.starts(with: Array("HTTP/".utf8).prefix(first.count)), !OtherProtocols.looksLikeReply(first) else { return nil }
        return .statusLineMissing
    }

    /// Starts a message; `configure` fills in what its start line said before the delegate
    /// hears of it (the session judges the connection by it). A response's `context` is the
    /// request it answers, when the caller has asked for it already (nil: asked here).
    func begin(answering context: RequestContext? = nil, _ configure: (HTTPMessage) -> Void) -> HTTPMessage {
        let m = HTTPMessage(kind: role)
        m.arrival.startOffset = headOffset
        m.arrival.peerAck = headPeerAck
        m.arrival.firstByte = headTime
        m.arrival.lastByte = headTime
        let answered = role == .response ? (context ?? requestBeingAnswered()) : nil
        if let answered { m.requestMethod = answered.method }
        if skippedSinceLastMessage > 0 && messagesBegun > 0 {
            // Bytes that were not HTTP came between the previous message and this one. (At the
            // start of a direction picked up mid-stream they are the end of an unseen message,
            // and only the connection's unexpected_*_data says so.)
            m.note(.garbageSkipped)
        }
        skippedSinceLastMessage = 0
        messagesBegun += 1
        configure(m)
        // An HTTP/0.9 request gets no status line back; a server that sends one speaks another
        // version than its client (a smuggling vector).
        if let answered, answered.isHTTP09, !m.isHTTP09 { m.note(.http09AnsweredWithStatusLine) }
        setMessage(m)
        callout { delegate.parserBegan(m) }
        return m
    }

    /// A reply to an HTTP/0.9 request: no status line, no header section, the rest of the stream
    /// is its body. `headersEnd`: when the head "ended" (unknown for a reply cut short).
    func beginHTTP09Reply(headersEnd: Timestamp?, answering context: RequestContext) -> HTTPMessage {
        let m = begin(answering: context) { m in
            m.isHTTP09 = true
            m.startLineParsed = true
        }
        m.headersComplete = true
        if let headersEnd { m.arrival.headersEnd = headersEnd }
        m.body.closeDelimited = true
        m.note(.http09)
        callout { delegate.parserCompletedHead(m) }
        return m
    }

    /// What the head buffer holds is body after all (an HTTP/0.9 reply).
    func bodyFromBuffer() {
        let held = buffer
        buffer.removeAll(keepingCapacity: true)
        held.withUnsafeBytes { bodyData($0, wire: $0.count) }
    }

    /// The request a response starting now answers (asked of the delegate: the pairing knows).
    func requestBeingAnswered() -> RequestContext {
        callout { delegate.parserRequestBeingAnswered() }
    }

    /// Bytes that are not HTTP where a message should start: counted for the connection, and
    /// remembered so that the next message found in this direction is flagged.
    func skipped(_ weird: Weird, bytes: Int) {
        skippedSinceLastMessage += bytes
        callout { delegate.parserSkipped(weird, bytes: bytes) }
    }

    /// Parses the header lines held in the buffer into the message: the message gets an exact-size
    /// copy of the head, and each field is a name range and a value range of it.
    func parseHeaderFields(into m: HTTPMessage, trailers: Bool = false) {
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
                // memchr: a byte loop cost about four instructions a byte of every name.
                var colon = contentEnd
                if let base = p.baseAddress, let found = memchr(base + lineStart, 0x3A, contentEnd - lineStart) {
                    colon = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                }
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
    func completeHead(at ts: Timestamp) {
        guard let m = message else { transition(to: .start); return }
        if !m.isHTTP09 { parseHeaderFields(into: m) }
        m.headersSize = buffer.count
        m.headersComplete = true
        m.arrival.headersEnd = ts
        m.arrival.lastByte = ts
        buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
        lineStart = 0
        callout { delegate.parserCompletedHead(m) }
        let framing = BodyFraming.decide(for: m)
        for w in framing.weirds { m.note(w) }
        m.body.chunked = framing.kind == .chunked
        m.body.contentLength = framing.length
        setUpDecoder(m)
        switch framing.kind {
        case .none:
            if role == .request, framing.weirds.contains(where: BodyFraming.unframeable.contains) { unframedBodyMayFollow = true }
            endMessage(at: ts, complete: true)
        case .length:
            if framing.length == 0 { endMessage(at: ts, complete: true) } else { transition(to: .body(remaining: framing.length ?? 0)) }
        case .chunked:
            transition(to: .chunkSize)
        case .untilClose:
            m.body.closeDelimited = true
            transition(to: .untilClose)
        case .tunnel:
            endMessage(at: ts, complete: true)
            transition(to: .tunnel)
        }
    }

    /// A head cut short (gap, close, size limit): keep what was complete and end the message.
    func interruptHead(at ts: Timestamp, weird: Weird) {
        if message == nil, !buffer.isEmpty {
            // The start line itself may be all there is.
            var end = buffer.firstIndex(of: 0x0A) ?? buffer.count
            if end > 0 && buffer[end - 1] == 0x0D { end -= 1 }
            if end > 0 {
                let line = buffer[0..<end]
                if role == .request, let parsed = RequestLine(line) {
                    _ = begin { m in
                        m.method = parsed.method; m.target = parsed.target; m.version = parsed.version
                        m.startLineParsed = true
                    }
                } else if role == .response, let parsed = StatusLine(line) {
                    _ = begin { m in
                        m.version = parsed.version; m.status = parsed.status; m.reason = parsed.reason
                        m.startLineParsed = true
                    }
                }
            }
        }
        if message == nil, role == .response, !buffer.isEmpty, case let context = requestBeingAnswered(), let form = replyForm(context, buffer[...]) {
            // An HTTP/0.9 reply shorter than one line.
            let m = beginHTTP09Reply(headersEnd: nil, answering: context)
            if form == .statusLineMissing { m.note(.statusLineMissing) }
            bodyFromBuffer()
            lineStart = 0
            endMessage(at: ts, complete: true)
            return
        }
        guard let m = message else {
            if !buffer.isEmpty {
                skipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
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

}
