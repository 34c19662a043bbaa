#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Limits and choices of the HTTP parser (a value type, like NIO's decoder limits).
public struct HTTPParserOptions: Sendable {
    /// Keep decoded bodies in memory (for `--bodies`), up to `maxBodyBytes` each.
    public var keepBodies = false
    /// Leave the whole-body inflate of bodies not kept to the export thread (`HTTPMessage.
    /// settleDecoding`): only for a run whose transactions all reach their sinks through an
    /// `ExportThread`, which settles each before handing it on.
    public var settleDecodingOnExport = false
    public var maxBodyBytes = 16 << 20
    /// Size cap of a start line plus header section; the rest of an oversized head is skipped.
    public var maxHeaderBytes = 1 << 20
    public var maxHeaderFields = 1000
    /// Decoding stops here (a decompression bomb); the size is then flagged as a lower bound.
    public var maxDecodedBytes: UInt64 = 1 << 30
    /// What the bodies being kept (`--bodies`) of all messages not yet emitted may hold together
    /// (a pipeline makes one when none is given).
    public var bodyBudget: BodyBudget? = nil
    /// What the WebSocket stage keeps of each socket's messages.
    public var webSocket = WebSocketOptions()
    /// What the WebSocket messages listed on all sockets not yet emitted may hold together
    /// (a pipeline makes one when none is given).
    public var webSocketBudget: BodyBudget? = nil
    public init() {}
}

/// The bytes that the kept bodies (`--bodies`) of messages still being received hold, over all
/// connections of a pipeline: each body is capped at `maxBodyBytes`, and this caps them together
/// (8,192 connections each half-way through a 16 MiB body would otherwise be 64 GiB). A body
/// that would pass it is cut there, flagged `bodies_budget_exceeded`; sizes stay exact. A
/// message's bytes are given back when its transaction is emitted (after that the export
/// queue's own cap bounds them), or when the message is dropped unemitted. Cleartext bodies are
/// charged and given back on the pipeline's thread in capture order; decrypted ones on the
/// decryption thread, so when the budget bites with both at once, which body is cut can depend
/// on timing (it is flagged either way). Atomic for that, and because a dropped message may be
/// freed on the export thread.
public final class BodyBudget: Sendable {
    public let limit: Int
    private let held = Atomic<Int>(0)
    public init(limit: Int = 32 << 20) { self.limit = limit }
    public var used: Int { held.load(ordering: .relaxed) }
    /// Charges `n` bytes (the caller took no more than `limit - used`).
    func charge(_ n: Int) { if n > 0 { held.add(n, ordering: .relaxed) } }
    func give(_ n: Int) { held.subtract(n, ordering: .relaxed) }
}

/// What the response parser needs to know of the request a response answers (RFC 9112 §6.3:
/// a reply to HEAD has no body, a 2xx to CONNECT starts a tunnel; an HTTP/0.9 request gets a
/// reply without a status line). The parser asks for it; nobody writes it into its message.
public struct RequestContext: Sendable, Equatable {
    public var method: String?
    public var isHTTP09: Bool
    /// The request is HTTP/1.x and the first of a connection captured from its start with
    /// nothing lost: server bytes that are no status line are a reply in HTTP/0.9's form (the
    /// server answered without one), not a part of something unseen.
    public var replyMayLackStatusLine: Bool
    public init(method: String?, isHTTP09: Bool, replyMayLackStatusLine: Bool = false) {
        self.method = method
        self.isHTTP09 = isHTTP09
        self.replyMayLackStatusLine = replyMayLackStatusLine
    }
    public static let unknown = RequestContext(method: nil, isHTTP09: false)
}

/// Receives the messages of one direction as the parser finds them. Call order per message:
/// `parserBegan`, then `parserCompletedHead` (unless the head was cut short), then `parserEnded`.
///
/// A delegate must not call back into the parser that is calling it (NIO's rule for its HTTP
/// decoder); debug builds trap when it does. It may act on the other direction's parser.
public protocol HTTPParserDelegate: AnyObject {
    func parserBegan(_ message: HTTPMessage)
    func parserCompletedHead(_ message: HTTPMessage)
    func parserEnded(_ message: HTTPMessage)
    /// Asked by the response parser when a response starts: the request it answers.
    func parserRequestBeingAnswered() -> RequestContext
    /// Data that is not HTTP where a message should start (counted, then skipped).
    func parserSkipped(_ weird: Weird, bytes: Int)
    /// Bytes of a tunnel (after a 101 or a CONNECT 2xx), for a delegate that reads what the
    /// connection switched to (h2c after `Upgrade: h2c`, what a CONNECT tunnel carries), from the
    /// parser of `role`'s direction. Counted by the parser either way.
    func parserTunnelData(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from role: HTTPMessage.Kind)
}

extension HTTPParserDelegate {
    public func parserTunnelData(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from role: HTTPMessage.Kind) {}
}

/// An incremental HTTP/1.x parser for one direction of a connection (requests or responses).
///
/// Input: in-order stream bytes (`parse`), gaps of known length (`gap`) and the end of the
/// direction (`finish`), split anywhere: the messages found never depend on how the bytes were
/// cut into chunks. Output: `HTTPMessage`s through the delegate. Only the bytes of a message head
/// are copied (into a reused buffer); bodies are counted, decoded and kept only when asked.
/// Framing follows RFC 9112 §6; every deviation is a named `Weird`.
///
/// The state machine is explicit: `State` below, and every change of state goes through
/// `transition(to:)`, which checks it against the table in `isAllowed` in debug builds. By
/// concern, the rest of the parser is in `HTTPStreamParser+Head` (start line and header
/// section), `+Chunked` (chunked framing and trailers), `+Resync` (finding the next message
/// after garbage or a gap) and `+Body` (body bytes, content decoding, the end of a message).
public final class HTTPStreamParser {
    enum State {
        /// Between messages: blank lines are skipped, anything else starts a head.
        case start
        /// Reading a start line and header section into `buffer`.
        case head
        /// A request line without a version has ended: HTTP/0.9 if nothing more comes from the
        /// client before the server answers or the direction ends; an HTTP/1.x request whose
        /// version is missing if more lines follow. Decided only when one of those happens, so
        /// the answer never depends on how the bytes were split.
        case http09Candidate
        case body(remaining: UInt64)
        case chunkSize
        case chunkData(remaining: UInt64)
        case chunkDataEnd(sawCR: Bool)
        case trailers
        case untilClose
        /// CONNECT 2xx or 101: the rest of the direction is counted, not parsed. Never left.
        case tunnel
        /// After garbage or a gap: looking for a plausible start line.
        case resync
    }

    public let role: HTTPMessage.Kind
    private(set) var state: State = .start
    var buffer: [UInt8] = []
    var lineStart = 0
    var headOffset: UInt64 = 0
    /// The peer offset acknowledged by the segment that carried the head's first byte.
    var headPeerAck: UInt64? = nil
    var headTime: Timestamp = .zero
    var lastTime: Timestamp = .zero
    /// The time the line of an HTTP/0.9 candidate request ended.
    var http09LineEnd: Timestamp = .zero
    /// Bytes skipped as not-HTTP since the last message; the next message found says so.
    var skippedSinceLastMessage = 0
    /// The last request could not be framed (its body length was invalid): the next request
    /// line may start with that body's bytes (`abcGET / HTTP/1.1`).
    var unframedBodyMayFollow = false
    var messagesBegun = 0
    private(set) var message: HTTPMessage? = nil
    public private(set) var tunnelBytes: UInt64 = 0
    public private(set) var tunnelStart: Timestamp? = nil
    public private(set) var tunnelEnd: Timestamp? = nil
    let options: HTTPParserOptions
    /// Unowned and unchecked: the delegate (the connection's session) owns this parser and
    /// outlives it; the per-packet path must not pay for reference counting on every call.
    unowned(unsafe) let delegate: any HTTPParserDelegate
    #if DEBUG
    /// Set while the delegate is being called: calling back into this parser then is a bug.
    private var inCallout = false
    #endif

    public init(role: HTTPMessage.Kind, options: HTTPParserOptions, delegate: any HTTPParserDelegate) {
        self.role = role
        self.options = options
        self.delegate = delegate
    }

    public var isTunnel: Bool { if case .tunnel = state { return true }; return false }

    // MARK: - The state machine

    /// The one place where the state changes.
    @inline(__always) func transition(to next: State) {
        #if DEBUG
        precondition(Self.isAllowed(from: state, to: next), "HTTPStreamParser: \(state) → \(next) is not a transition of the parser")
        #endif
        state = next
    }

    /// The transitions of the parser. A body state may move to itself with another count.
    static func isAllowed(from: State, to: State) -> Bool {
        switch (from, to) {
        case (.tunnel, .tunnel): return true
        case (.tunnel, _): return false
        case (_, .tunnel): return true                                  // CONNECT 2xx / 101, either direction
        case (_, .resync): return true                                  // a gap or garbage, anywhere
        case (_, .start): return true                                   // a message ended (or the direction did)
        case (.start, .head), (.resync, .head), (.http09Candidate, .head): return true
        case (.head, .http09Candidate): return true
        case (.head, .body), (.head, .chunkSize), (.head, .untilClose): return true
        case (.body, .body): return true
        case (.chunkSize, .chunkData), (.chunkSize, .trailers): return true
        case (.chunkData, .chunkData), (.chunkData, .chunkDataEnd): return true
        case (.chunkDataEnd, .chunkDataEnd), (.chunkDataEnd, .chunkSize): return true
        default: return false
        }
    }

    /// Calls the delegate; in debug builds, a call back into this parser from there traps.
    @inline(__always) func callout<R>(_ body: () -> R) -> R {
        #if DEBUG
        precondition(!inCallout, "HTTPStreamParser: the delegate called back into the parser that is calling it")
        inCallout = true
        defer { inCallout = false }
        #endif
        return body()
    }

    @inline(__always) private func checkNotReentered() {
        #if DEBUG
        precondition(!inCallout, "HTTPStreamParser: re-entered from its own delegate")
        #endif
    }

    /// Switches the rest of the direction to an opaque tunnel (CONNECT 2xx, 101 Switching Protocols).
    public func enterTunnel() {
        checkNotReentered()
        transition(to: .tunnel)
    }

    func setMessage(_ m: HTTPMessage?) { message = m }

    // MARK: - Input

    public func parse(_ chunk: StreamChunk) {
        checkNotReentered()
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
                headPeerAck = chunk.peerAck
                headTime = ts
                buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
                lineStart = 0
                transition(to: .head)
            case .head:
                if i == 0 && lineStart == 0 && !buffer.isEmpty && message == nil && dropsHeldGarbage(before: bytes) {
                    // What was held of a first line cannot start a message, and this segment
                    // starts one: the message starts here.
                    headOffset = chunk.offset
                    headPeerAck = chunk.peerAck
                    headTime = ts
                }
                i = consumeHead(bytes, from: i, at: ts)
            case .http09Candidate:
                // More bytes from the client after a versionless request line: an HTTP/1.x
                // request whose version is missing, with header fields to come.
                if let m = message {
                    m.isHTTP09 = false
                    m.note(.badRequestLine)
                    m.weirds.removeAll { $0 == .http09 }
                }
                lineStart = buffer.count
                transition(to: .head)
            case .body(let remaining):
                let take = Int(min(UInt64(n - i), remaining))
                bodyData(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]), wire: take)
                i += take
                if remaining == UInt64(take) { endMessage(at: ts, complete: true) } else { transition(to: .body(remaining: remaining - UInt64(take))) }
            case .chunkSize:
                i = consumeChunkSizeLine(bytes, from: i, at: ts)
            case .chunkData(let remaining):
                let take = Int(min(UInt64(n - i), remaining))
                bodyData(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]), wire: take)
                i += take
                transition(to: remaining == UInt64(take) ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - UInt64(take)))
            case .chunkDataEnd(let sawCR):
                let c = bytes[i]
                if c == 0x0D && !sawCR {
                    message?.body.wireBytes += 1
                    i += 1
                    transition(to: .chunkDataEnd(sawCR: true))
                } else if c == 0x0A {
                    message?.body.wireBytes += 1
                    i += 1
                    transition(to: .chunkSize)
                } else {
                    message?.note(.missingChunkTerminator)
                    transition(to: .chunkSize)
                }
            case .trailers:
                i = consumeTrailers(bytes, from: i, at: ts)
            case .untilClose:
                bodyData(UnsafeRawBufferPointer(rebasing: bytes[i..<n]), wire: n - i)
                message?.arrival.lastByte = ts
                i = n
            case .tunnel:
                if tunnelStart == nil { tunnelStart = ts }
                tunnelEnd = ts
                tunnelBytes &+= UInt64(n - i)
                let rest = UnsafeRawBufferPointer(rebasing: bytes[i..<n])
                callout { delegate.parserTunnelData(rest, at: ts, from: role) }
                i = n
            case .resync:
                i = consumeResync(bytes, from: i, offset: chunk.offset, peerAck: chunk.peerAck, at: ts)
            }
        }
    }

    /// Bytes that were never captured.
    public func gap(_ gap: StreamGap) {
        checkNotReentered()
        lastTime = gap.timestamp
        switch state {
        case .body(let remaining):
            let inBody = min(gap.length, remaining)
            bodyGap(inBody)
            if inBody == remaining {
                endMessage(at: gap.timestamp, complete: true)
                if gap.length > inBody { transition(to: .resync); buffer.removeAll(keepingCapacity: true) }
            } else {
                transition(to: .body(remaining: remaining - inBody))
            }
        case .chunkData(let remaining) where gap.length <= remaining:
            bodyGap(gap.length)
            transition(to: gap.length == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - gap.length))
        case .untilClose:
            bodyGap(gap.length)
        case .tunnel:
            tunnelBytes &+= gap.length
        case .start, .resync:
            transition(to: .resync)
            buffer.removeAll(keepingCapacity: true)
        case .http09Candidate:
            // What the client sent after its line is lost: the line is all that is known.
            resolveHTTP09Candidate()
            transition(to: .resync)
            buffer.removeAll(keepingCapacity: true)
        case .head:
            interruptHead(at: gap.timestamp, weird: .headerGap)
            transition(to: .resync)
            buffer.removeAll(keepingCapacity: true)
        case .chunkData, .chunkSize, .chunkDataEnd, .trailers:
            if case .chunkData(let remaining) = state { bodyGap(remaining) }
            message?.note(.headerGap)
            endMessage(at: gap.timestamp, complete: false)
            transition(to: .resync)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// The direction ended (FIN, RST, end of capture).
    public func finish(at timestamp: Timestamp, reason: CloseReason) {
        checkNotReentered()
        switch state {
        case .untilClose:
            // A close-delimited body is complete when the connection closes (RFC 9112 §6.3 item 8).
            endMessage(at: message?.arrival.lastByte ?? lastTime, complete: true)
        case .head:
            interruptHead(at: lastTime, weird: .interruptedByClose)
        case .http09Candidate:
            resolveHTTP09Candidate()
        case .body, .chunkSize, .chunkData, .chunkDataEnd, .trailers:
            message?.note(.interruptedByClose)
            endMessage(at: lastTime, complete: false)
        case .tunnel, .start, .resync:
            break
        }
        if case .tunnel = state {} else { transition(to: .start) }
    }

    /// A request parser holding an HTTP/0.9 candidate: the server has started to answer, so
    /// nothing more came from the client — the request was HTTP/0.9. Called by the session
    /// (the response parser's delegate) before it answers `parserRequestBeingAnswered`.
    public func resolvePendingHTTP09() {
        checkNotReentered()
        if case .http09Candidate = state { resolveHTTP09Candidate() }
    }

    private func resolveHTTP09Candidate() {
        completeHead(at: http09LineEnd)
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
